"""The linked facts the geo corpus is made of: countries, capitals, currencies, languages, subdivisions.

Countries (capital, population, area, calling code, borders, ...) come from the
`countryinfo` package; the names of currencies and languages, and the ISO 3166-2
subdivisions, from `pycountry`. Both ship their data in the wheel, so the corpus
builds offline and the same on every machine.

Each entity becomes one document whose id is the entity id ("country/PER",
"capital/PER", "currency/PEN", "language/que", "subregion/south-america"), except
subdivisions: a country's subdivisions share one page ("subdivisions/PER"), since
five thousand two-line pages would outrank every country page in BM25 (length
normalisation favours short pages). `links` holds the ids of the entities it
names, so task synthesis can walk from one document to the next.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..errors import FactoryError


@dataclass
class Entity:
    id: str  # also the id of its document
    kind: str  # country | capital | currency | language | subdivision | subregion
    name: str
    attrs: dict[str, Any] = field(default_factory=dict)  # literal facts (numbers, codes)
    links: dict[str, list[str]] = field(default_factory=dict)  # relation -> entity ids
    doc: str = ""  # the document that holds its facts: its own (the id), or a shared one (a country's subdivisions)

    def __post_init__(self) -> None:
        self.doc = self.doc or self.id

    def link(self, relation: str, target: str) -> None:
        self.links.setdefault(relation, [])
        if target not in self.links[relation]:
            self.links[relation].append(target)

    def one(self, relation: str) -> str | None:
        """The single target of a relation, or None when there are none or several."""
        targets = self.links.get(relation, [])
        return targets[0] if len(targets) == 1 else None


@dataclass(eq=False)  # hashed by identity: caches key on the one loaded world
class World:
    entities: dict[str, Entity]

    def kind(self, kind: str) -> list[Entity]:
        return [entity for entity in self.entities.values() if entity.kind == kind]

    def __getitem__(self, entity_id: str) -> Entity:
        return self.entities[entity_id]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _sources() -> tuple[Any, Any]:
    try:
        import countryinfo
        import pycountry
    except ImportError as exc:  # both are core dependencies; a broken install says which
        raise FactoryError(
            f"the geo corpus needs the '{exc.name}' package: pip install countryinfo pycountry"
        ) from None
    return countryinfo, pycountry


@lru_cache(maxsize=1)
def load_world() -> World:
    """Every entity of the geo corpus, linked (cached: the packages' data does not change in a process)."""
    countryinfo, pycountry = _sources()
    rows = sorted((c.info() for c in countryinfo.all_countries()), key=lambda row: row.get("name") or "")
    entities: dict[str, Entity] = {}
    by_alpha3 = {row["ISO"]["alpha3"]: row for row in rows if row.get("ISO", {}).get("alpha3") and row.get("name")}
    for alpha3, row in sorted(by_alpha3.items()):
        add_country(entities, alpha3, row, pycountry)
    for alpha3, row in sorted(by_alpha3.items()):
        for border in row.get("borders") or []:
            if f"country/{border}" in entities:
                entities[f"country/{alpha3}"].link("borders", f"country/{border}")
    add_superlatives(entities)
    for alpha3, row in sorted(by_alpha3.items()):
        add_subdivisions(entities, alpha3, row["ISO"].get("alpha2"), pycountry)
    return World(entities)


def add_country(entities: dict[str, Entity], alpha3: str, row: dict, pycountry: Any) -> None:
    country = Entity(f"country/{alpha3}", "country", row["name"].strip())
    iso = row.get("ISO", {})
    attrs = {
        "population": row.get("population") or None,
        "area": int(row["area"]) if row.get("area") else None,
        "calling_code": (row.get("callingCodes") or [None])[0] or None,
        "tld": (row.get("tld") or [None])[0] or None,
        "alpha3": alpha3,
        "alpha2": iso.get("alpha2"),
        "numeric": iso.get("numeric"),
        "demonym": row.get("demonym") or None,
        "region": row.get("region") or None,
        "subregion": row.get("subregion") or None,
        "timezones": [zone.replace("\u2212", "-") for zone in row.get("timezones") or []],
    }
    country.attrs = {key: value for key, value in attrs.items() if value not in (None, "", [])}
    entities[country.id] = country
    capital = row.get("capital") or ""
    capital = (capital[0] if isinstance(capital, list) and len(capital) == 1 else capital) or ""
    capital = capital.strip() if isinstance(capital, str) else ""  # several capitals: none is "the" capital
    if capital:
        city = Entity(f"capital/{alpha3}", "capital", capital)
        latlng = row.get("capital_latlng") or []
        if len(latlng) == 2:
            city.attrs = {"latitude": round(float(latlng[0]), 2), "longitude": round(float(latlng[1]), 2)}
        city.link("country", country.id)
        country.link("capital", city.id)
        entities[city.id] = city
    for code in row.get("currencies") or []:
        add_named(entities, country, "currency", code, pycountry.currencies.get(alpha_3=code))
    for code in row.get("languages") or []:
        add_named(entities, country, "language", code, pycountry.languages.get(alpha_2=code))
    if country.attrs.get("subregion"):
        name = country.attrs["subregion"]
        group = entities.setdefault(f"subregion/{slug(name)}", Entity(f"subregion/{slug(name)}", "subregion", name))
        group.attrs["region"] = country.attrs.get("region")
        group.link("countries", country.id)
        country.link("subregion", group.id)


def add_named(entities: dict[str, Entity], country: Entity, kind: str, code: str, record: Any) -> None:
    """A currency or language: the ISO record names it; one entity per code, linked both ways."""
    if record is None:
        return  # a code the ISO tables do not know: left out rather than named by its code
    key = record.alpha_3 if kind == "currency" else record.alpha_3
    entity_id = f"{kind}/{key}"
    if entity_id not in entities:
        attrs = {"code": record.alpha_3}
        if kind == "currency" and getattr(record, "numeric", None):
            attrs["numeric"] = record.numeric
        if kind == "language" and getattr(record, "alpha_2", None):
            attrs["alpha2"] = record.alpha_2
        entities[entity_id] = Entity(entity_id, kind, record.name, attrs)
    entities[entity_id].link("countries", country.id)
    country.link("currencies" if kind == "currency" else "languages", entity_id)


def add_subdivisions(entities: dict[str, Entity], alpha3: str, alpha2: str | None, pycountry: Any) -> None:
    if not alpha2:
        return
    country = entities[f"country/{alpha3}"]
    for record in sorted(pycountry.subdivisions.get(country_code=alpha2) or [], key=lambda r: r.code):
        entity = Entity(f"subdivision/{record.code}", "subdivision", record.name, doc=f"subdivisions/{alpha3}")
        entity.attrs = {"code": record.code, "type": record.type}
        entity.link("country", country.id)
        if record.parent_code:
            entity.link("parent", f"subdivision/{record.parent_code}")
        entities[entity.id] = entity
        country.link("subdivisions", entity.id)


def largest(entities: dict[str, Entity], ids: list[str], attr: str) -> str | None:
    """The id with the largest `attr`, or None on a tie or missing values (a superlative must be unique)."""
    values = sorted(((entities[i].attrs.get(attr) or 0, i) for i in ids), reverse=True)
    if len(values) < 2 or values[0][0] == 0 or values[0][0] == values[1][0]:
        return None
    return values[0][1]


def add_superlatives(entities: dict[str, Entity]) -> None:
    """Stated superlatives link countries to countries (a neighbour, a subregion's leader): deeper chains."""
    for entity in list(entities.values()):
        members = entity.links.get("borders" if entity.kind == "country" else "countries", [])
        if entity.kind not in ("country", "subregion"):
            continue
        for attr, relation in (("population", "most_populous"), ("area", "largest")):
            if entity.kind == "country" and relation == "largest":
                continue  # one neighbour superlative per country is enough prose
            top = largest(entities, members, attr)
            if top:
                entity.link(relation, top)
