"""What can be asked about an entity of the geo world, and how an entity can be described instead of named.

A `Description` identifies an entity through one fact about another thing: "the
country whose capital is {t}" names Lima (or describes it in turn) and is true of
Peru alone. Only facts that are unique in the data are offered, so every chain of
descriptions still points at exactly one entity. A `Question` asks one literal
fact of an entity. Each has several wordings; the candidate's own random
generator picks one, so no single template runs through the set.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from ..corpus.facts import Entity, World


@dataclass(frozen=True)
class Description:
    subject: str  # the entity described
    relation: str
    phrases: tuple[str, ...]  # wordings with "{t}": the target's name or its own description
    target: str | None  # an entity id, or None when the target is a literal value
    value: str  # the target's name or the literal value
    doc: str  # the document that states the fact
    query: str  # a search a reader would type to find that document, knowing `value`


@dataclass(frozen=True)
class Question:
    attr: str
    phrases: tuple[str, ...]  # wordings with "{e}": the entity's name or description
    answers: tuple[str, ...]  # the value first, then aliases
    query: str


def number_aliases(value: int) -> tuple[str, ...]:
    return (str(value), f"{value:,}", f"{value:,}".replace(",", " "))


class Uniques:
    """Counts that say which inverse relations single out one entity."""

    def __init__(self, world: World):
        countries = world.kind("country")
        self.capitals = Counter(world[c.links["capital"][0]].name for c in countries if c.links.get("capital"))
        self.calling = Counter(c.attrs["calling_code"] for c in countries if c.attrs.get("calling_code"))
        self.tlds = Counter(c.attrs["tld"] for c in countries if c.attrs.get("tld"))
        # A subdivision named like a country or a capital ("Lima", "Georgia") would be ambiguous to a reader.
        self.names = Counter(e.name for e in world.entities.values() if e.kind in ("subdivision", "country", "capital"))


@lru_cache(maxsize=4)
def uniques(world: World) -> Uniques:
    return Uniques(world)


def country_descriptions(world: World, u: Uniques, c: Entity) -> list[Description]:
    out, cap = [], c.one("capital")
    if cap and u.capitals[world[cap].name] == 1:
        name = world[cap].name
        out.append(Description(c.id, "capital", ("the country whose capital is {t}", "the country with {t} as its capital"),
                               cap, name, cap, f"{name} capital"))  # fmt: skip
    for cur in c.links.get("currencies", []):
        if world[cur].links.get("countries") == [c.id]:
            name = world[cur].name
            out.append(Description(c.id, "currency", ("the country whose currency is the {t}",
                                   "the only country where the {t} is legal tender"), cur, name, cur, f"{name} currency"))  # fmt: skip
    for lang in c.links.get("languages", []):
        if world[lang].links.get("countries") == [c.id]:
            name = world[lang].name
            out.append(Description(c.id, "language", ("the only country where {t} is an official language",
                                   "the country that has {t} as its sole-country official language"), lang, name, lang,
                                   f"{name} language official"))  # fmt: skip
    for border in c.links.get("borders", []):
        if world[border].links.get("borders") == [c.id]:
            name = world[border].name
            out.append(Description(c.id, "sole_neighbour", ("the only country that shares a land border with {t}",
                                   "the single land neighbour of {t}"), border, name, border, f"{name} land borders"))  # fmt: skip
    code = c.attrs.get("calling_code")
    if code and u.calling[code] == 1:
        out.append(Description(c.id, "calling_code", ("the country whose international calling code is +{t}",
                               "the country reached by dialling the country code +{t}"), None, code, c.id,
                               f"international calling code +{code}"))  # fmt: skip
    tld = c.attrs.get("tld")
    if tld and u.tlds[tld] == 1:
        out.append(Description(c.id, "tld", ("the country whose internet top-level domain is {t}",), None, tld, c.id,
                               f"internet top-level domain {tld}"))  # fmt: skip
    for sub in [s for s in c.links.get("subdivisions", []) if u.names[world[s].name] == 1][:3]:
        s = world[sub]
        if not s.links.get("parent"):
            kind = s.attrs["type"].lower()
            out.append(Description(c.id, "subdivision", (f"the country that has {article(kind)} {kind} called {{t}}",
                                   f"the country one of whose {plural(kind)} is {{t}}"), sub, s.name, s.doc,
                                   f"{s.name} {kind}"))  # fmt: skip
    for other in c.links.get("borders", []):
        if world[other].one("most_populous") == c.id:
            name = world[other].name
            out.append(Description(c.id, "most_populous_neighbour", ("the most populous neighbour of {t}",
                                   "the most populous country bordering {t}"), other, name, other,
                                   f"{name} neighbours most populous"))  # fmt: skip
    group = c.one("subregion")
    for relation, phrases, words in SUPERLATIVES:
        if group and world[group].one(relation) == c.id:
            name = world[group].name
            out.append(
                Description(c.id, f"{relation}_in_subregion", phrases, group, name, group, f"{name} subregion {words}")
            )
    return out


SUPERLATIVES = (
    ("most_populous", ("the most populous country of {t}", "the most populous country in {t}"), "most populous"),
    ("largest", ("the largest country by area in {t}", "the country with the largest area in {t}"), "largest by area"),
)


def article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def plural(word: str) -> str:
    """English plurals of the subdivision kinds: county -> counties, parish -> parishes, region -> regions."""
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + "es" if word.endswith(("s", "sh", "ch", "x", "z")) else word + "s"


def subregion_descriptions(world: World, u: Uniques, e: Entity) -> list[Description]:
    phrases = ("the subregion that includes {t}", "the subregion of the world that includes {t}")
    return [
        Description(e.id, "subregion_of", phrases, cid, world[cid].name, cid, f"{world[cid].name} country")
        for cid in e.links.get("countries", [])[:6]
    ]


def capital_descriptions(world: World, u: Uniques, e: Entity) -> list[Description]:
    country = world[e.links["country"][0]]
    return [Description(e.id, "capital_of", ("the capital of {t}", "the capital city of {t}"), country.id,
                        country.name, e.id, f"capital of {country.name}")]  # fmt: skip


def currency_descriptions(world: World, u: Uniques, e: Entity) -> list[Description]:
    out = [Description(e.id, "iso4217", ("the currency with ISO 4217 code {t}",), None, e.attrs["code"], e.id,
                       f"ISO 4217 code {e.attrs['code']}")]  # fmt: skip
    for country_id in e.links.get("countries", []):
        country = world[country_id]
        if country.links.get("currencies") == [e.id]:
            out.append(Description(e.id, "currency_of", ("the currency of {t}", "the currency used in {t}"), country_id,
                                   country.name, country_id, f"{country.name} currency"))  # fmt: skip
    return out


def language_descriptions(world: World, u: Uniques, e: Entity) -> list[Description]:
    out = [Description(e.id, "iso639", ("the language with ISO 639-3 code {t}",), None, e.attrs["code"], e.id,
                       f"ISO 639-3 code {e.attrs['code']}")]  # fmt: skip
    for country_id in e.links.get("countries", []):
        country = world[country_id]
        if country.links.get("languages") == [e.id]:
            out.append(Description(e.id, "language_of", ("the only official language of {t}",), country_id,
                                   country.name, country_id, f"{country.name} official languages"))  # fmt: skip
    return out


def subdivision_descriptions(world: World, u: Uniques, e: Entity) -> list[Description]:
    country = world[e.links["country"][0]]
    twins = [s for s in country.links.get("subdivisions", []) if world[s].name == e.name]
    if len(twins) != 1:
        return []
    kind = e.attrs["type"].lower()
    return [Description(e.id, "subdivision_of", (f"the {kind} named {e.name} in {{t}}", f"{e.name}, {article(kind)} {kind} of {{t}}"),
                        country.id, country.name, e.doc, f"{e.name} {kind} {country.name}")]  # fmt: skip


DESCRIBERS: dict[str, Callable[[World, Uniques, Entity], list[Description]]] = {
    "country": country_descriptions,
    "capital": capital_descriptions,
    "currency": currency_descriptions,
    "language": language_descriptions,
    "subdivision": subdivision_descriptions,
    "subregion": subregion_descriptions,
}


def descriptions(world: World, entity: Entity) -> list[Description]:
    describer = DESCRIBERS.get(entity.kind)
    return describer(world, uniques(world), entity) if describer else []


def questions(world: World, e: Entity) -> list[Question]:
    """The literal facts one can ask of `e`, each with wordings and answer aliases."""
    a, out = e.attrs, []
    if e.kind == "country":
        if a.get("population"):
            out.append(Question("population", ("What is the population of {e}?", "How many inhabitants does {e} have?"),
                                number_aliases(a["population"]), "{n} population"))  # fmt: skip
        if a.get("area"):
            out.append(Question("area", ("What is the area of {e} in square kilometres?", "How many km2 does {e} cover?"),
                                number_aliases(a["area"]) + (f"{a['area']:,} km2",), "{n} area km2"))  # fmt: skip
        if a.get("calling_code"):
            out.append(Question("calling_code", ("What is the international calling code of {e}?",),
                                (f"+{a['calling_code']}", a["calling_code"]), "{n} calling code"))  # fmt: skip
        if a.get("tld"):
            out.append(Question("tld", ("What is the internet top-level domain of {e}?",), (a["tld"], a["tld"].lstrip(".")),
                                "{n} top-level domain"))  # fmt: skip
        if a.get("numeric"):
            out.append(Question("numeric", ("What is the ISO 3166-1 numeric code of {e}?",),
                                (a["numeric"], str(int(a["numeric"]))), "{n} numeric code"))  # fmt: skip
        if e.links.get("subdivisions"):
            n = len(e.links["subdivisions"])
            out.append(Question("subdivision_count", ("How many ISO 3166-2 subdivisions does {e} have?",),
                                (str(n),), "{n} subdivisions"))  # fmt: skip
    elif e.kind == "capital" and "latitude" in a:
        out.append(Question("latitude", ("At what latitude does {e} lie?", "What is the latitude of {e}?"),
                            (str(a["latitude"]),), "{n} latitude"))  # fmt: skip
    elif e.kind == "currency":
        out.append(Question("iso4217", ("What is the ISO 4217 code of {e}?",), (a["code"],), "{n} ISO 4217 code"))
        if a.get("numeric"):
            out.append(Question("currency_numeric", ("What is the ISO 4217 numeric code of {e}?",),
                                (a["numeric"], str(int(a["numeric"]))), "{n} numeric code"))  # fmt: skip
    elif e.kind == "language":
        out.append(Question("iso639", ("What is the ISO 639-3 code of {e}?",), (a["code"],), "{n} ISO 639-3 code"))
    elif e.kind == "subdivision":
        out.append(Question("iso3166_2", ("What is the ISO 3166-2 code of {e}?",), (a["code"],), "{n} ISO 3166-2"))
    return out
