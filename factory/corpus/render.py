"""Render each entity of the geo world as one short encyclopedia-style document.

Why several wordings per kind: a corpus written from one sentence template teaches
a search agent (and a model trained on its observations) that template. The
wording is picked by a hash of the entity id, so a build is deterministic.

What a document says is chosen so that a hop chain has to be followed: a country
names its currencies and languages but not their ISO codes (those are on the
currency and language pages), and every linked entity is named, so a reader can
go on from any page.
"""

from __future__ import annotations

import hashlib

from .facts import Entity, World


def pick(entity: Entity, options: list[str]) -> str:
    digest = int(hashlib.sha1(entity.id.encode()).hexdigest()[:8], 16)
    return options[digest % len(options)]


def number(value: int | float) -> str:
    return f"{value:,}"


def names(world: World, ids: list[str]) -> str:
    items = [world[i].name for i in ids if i in world.entities]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def render(world: World, entity: Entity) -> dict:
    text = RENDERERS[entity.kind](world, entity)
    title = entity.name
    if entity.kind == "capital":
        title = f"{entity.name} (capital of {world[entity.links['country'][0]].name})"
    return {"id": entity.id, "title": title, "text": text}


def country_text(world: World, c: Entity) -> str:
    a, parts = c.attrs, []
    where = f"in {a['subregion']}" if a.get("subregion") else f"in {a.get('region', 'the world')}"
    capital = names(world, c.links.get("capital", []))
    parts.append(
        pick(
            c,
            [
                f"{c.name} is a country {where}.",
                f"{c.name} is a sovereign state or territory {where}.",
                f"Lying {where}, {c.name} is a country or dependent territory.",
            ],
        )
        + (pick(c, [f" Its capital is {capital}.", f" The capital city is {capital}."]) if capital else "")
    )
    if a.get("population"):
        people = number(a["population"])
        parts.append(pick(c, [f"It has a population of {people}.", f"Population: {people} inhabitants."]))
    if a.get("area"):
        parts.append(pick(c, [f"It covers an area of {number(a['area'])} km2.", f"Area: {number(a['area'])} km2."]))
    if c.links.get("borders"):
        parts.append(f"{c.name} shares land borders with {names(world, c.links['borders'])}.")
        if c.one("most_populous"):
            parts.append(f"The most populous of its neighbours is {world[c.one('most_populous')].name}.")
    elif a.get("area"):
        parts.append(f"{c.name} has no land borders with other countries.")
    if c.links.get("currencies"):
        parts.append(
            pick(c, ["The currency used there is the ", "Money: the "]) + names(world, c.links["currencies"]) + "."
        )
    if c.links.get("languages"):
        parts.append(f"Official languages: {names(world, c.links['languages'])}.")
    codes = [f"ISO 3166-1 alpha-3 code is {a['alpha3']}"] + (
        [f"its numeric code is {a['numeric']}"] if a.get("numeric") else []
    )
    parts.append(f"Its {' and '.join(codes)}.")
    if a.get("calling_code"):
        parts.append(pick(c, [f"International calling code: +{a['calling_code']}.",
                              f"To call {c.name}, dial its international calling code +{a['calling_code']}."]))  # fmt: skip
    if a.get("tld"):
        parts.append(f"Internet top-level domain: {a['tld']}.")
    if a.get("demonym"):
        parts.append(f"People from {c.name} are called {a['demonym']}.")
    if a.get("timezones"):
        parts.append(f"Time zones: {', '.join(a['timezones'])}.")
    if c.links.get("subdivisions"):
        subs = c.links["subdivisions"]
        shown = names(world, subs[:6])
        parts.append(f"It has {len(subs)} first- and second-level subdivisions in ISO 3166-2, among them {shown}.")
    return " ".join(parts)


def capital_text(world: World, e: Entity) -> str:
    country = world[e.links["country"][0]].name
    head = pick(e, [f"{e.name} is the capital of {country}.", f"The capital city of {country} is {e.name}."])
    if "latitude" in e.attrs:
        head += f" It lies at latitude {e.attrs['latitude']} and longitude {e.attrs['longitude']}."
    return head


def currency_text(world: World, e: Entity) -> str:
    where = names(world, e.links.get("countries", []))
    numeric = f", numeric code {e.attrs['numeric']}" if e.attrs.get("numeric") else ""
    return pick(e, [f"The {e.name} (ISO 4217 code {e.attrs['code']}{numeric}) is a currency used in {where}.",
                    f"ISO 4217 lists the {e.name} under the code {e.attrs['code']}{numeric}. It is legal tender in {where}."])  # fmt: skip


def language_text(world: World, e: Entity) -> str:
    where = names(world, e.links.get("countries", []))
    two = f" and ISO 639-1 code {e.attrs['alpha2']}" if e.attrs.get("alpha2") else ""
    return pick(e, [f"{e.name} is a language with ISO 639-3 code {e.attrs['code']}{two}. It is an official language of {where}.",
                    f"The {e.name} language (ISO 639-3: {e.attrs['code']}{two}) has official status in {where}."])  # fmt: skip


def subdivisions_page(world: World, country: Entity) -> dict:
    """One page listing a country's ISO 3166-2 subdivisions: name, kind, code (and the unit it is part of)."""
    items = []
    for sub_id in country.links["subdivisions"]:
        sub = world[sub_id]
        parent = sub.one("parent")
        within = f", part of {world[parent].name}" if parent and parent in world.entities else ""
        items.append(f"{sub.name} ({sub.attrs['type'].lower()}, code {sub.attrs['code']}{within})")
    head = pick(country, [f"{country.name} is divided into {len(items)} subdivisions listed in ISO 3166-2:",
                          f"ISO 3166-2 lists {len(items)} subdivisions of {country.name}:"])  # fmt: skip
    return {
        "id": f"subdivisions/{country.attrs['alpha3']}",
        "title": f"Subdivisions of {country.name}",
        "text": head + " " + "; ".join(items) + ".",
    }


def subregion_text(world: World, e: Entity) -> str:
    members = e.links.get("countries", [])
    text = f"{e.name} is a subregion of {e.attrs.get('region')}. Its {len(members)} countries and territories are {names(world, members)}."
    if e.one("most_populous"):
        text += f" The most populous of them is {world[e.one('most_populous')].name}."
    if e.one("largest"):
        text += f" The largest by area is {world[e.one('largest')].name}."
    return text


RENDERERS = {
    "country": country_text,
    "capital": capital_text,
    "currency": currency_text,
    "language": language_text,
    "subregion": subregion_text,
}
