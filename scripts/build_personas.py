"""Build personas/library.jsonl from the hand-written lists in personas/components/.

    python scripts/build_personas.py           # (re)write the library
    python scripts/build_personas.py --check   # exit 1 if the file differs from a fresh build

Deterministic: one seeded random.Random drives every choice, and components
are used least-used-first so occupations, places, interests and templates
spread evenly. Candidates are deduplicated (exact and 3-gram near duplicates)
before the library is cut to size, and the result is checked again.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Iterator, NamedTuple

from factory.errors import FactoryError
from factory.paths import personas_dir
from factory.personas import LIBRARY_SOURCE, Persona, dedup_personas, exact_duplicate_pairs, near_duplicate_pairs

SEED = 20250107
TOTAL = 1200
STORY_SHARE = 0.2
RETIRED_SHARE = 0.14
OVERDRAW = 1.25  # candidates per persona kept, leaving room for duplicates to be dropped
# Stricter than the 0.8 near-duplicate check the tests apply to the shipped file:
# two template-made personas sharing half their 3-grams already read as siblings.
BUILD_THRESHOLD = 0.5
PREPOSITIONS = {"in", "on", "at", "aboard", "out", "across", "along", "above", "beneath", "running"}
DECADES = dict(enumerate("teens twenties thirties forties fifties sixties seventies eighties".split(), 1))
PRONOUNS = {
    "she": {"subj": "she", "Subj": "She", "poss": "her", "be": "is", "s": "s"},
    "he": {"subj": "he", "Subj": "He", "poss": "his", "be": "is", "s": "s"},
    "they": {"subj": "they", "Subj": "They", "poss": "their", "be": "are", "s": ""},
    "it": {"subj": "it", "Subj": "It", "poss": "its", "be": "is", "s": "s"},
}
PRONOUN_WEIGHTS = {"she": 45, "he": 45, "they": 10}


class Occupation(NamedTuple):
    title: str
    duty: str
    setting: str
    min_age: int
    max_age: int


class StoryRole(NamedTuple):
    role: str
    setting: str
    duty: str
    genre: str
    pronoun: str | None


class Components(NamedTuple):
    occupations: list[Occupation]
    places: list[tuple[str, frozenset[str]]]
    interests: list[str]
    goals: list[tuple[str, str]]  # (stage, goal)
    roles: list[StoryRole]
    hooks: list[str]
    traits: list[str]
    templates: list[tuple[frozenset[str], str]]  # (stages, template)


def read_rows(folder: Path, name: str, min_fields: int, max_fields: int) -> list[list[str]]:
    """Non-comment lines of a component file, split on "|"; a bad line is a one-line error."""
    path = folder / name
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [part.strip() for part in line.split("|")]
        if not min_fields <= len(fields) <= max_fields or not all(fields[:min_fields]):
            raise FactoryError(f"{path}:{number}: expected {min_fields} to {max_fields} fields separated by '|'")
        rows.append(fields)
    return rows


def parse_occupation(fields: list[str]) -> Occupation:
    setting = fields[2] if len(fields) > 2 else "any"
    low, high = (int(x) for x in (fields[3] if len(fields) > 3 else "22-67").split("-"))
    return Occupation(fields[0], fields[1], setting, low, high)


def read_components(folder: Path) -> Components:
    def tags(text: str) -> frozenset[str]:
        return frozenset(t.strip() for t in text.split(","))

    return Components(
        occupations=[parse_occupation(f) for f in read_rows(folder, "occupations.txt", 2, 4)],
        places=[(f[0], tags(f[1])) for f in read_rows(folder, "places.txt", 2, 2)],
        interests=[f[0] for f in read_rows(folder, "interests.txt", 1, 1)],
        goals=[(f[0], f[1]) for f in read_rows(folder, "goals.txt", 2, 2)],
        roles=[StoryRole(*f[:4], f[4] if len(f) > 4 else None) for f in read_rows(folder, "story_roles.txt", 4, 5)],
        hooks=[f[0] for f in read_rows(folder, "story_hooks.txt", 1, 1)],
        traits=[f[0] for f in read_rows(folder, "story_traits.txt", 1, 1)],
        templates=[(tags(f[0]), f[1]) for f in read_rows(folder, "templates.txt", 2, 2)],
    )


# -- rendering -----------------------------------------------------------

_ARTICLE = re.compile(r"\b([Aa])n? ([\w'-]+)")


def wants_an(word: str) -> bool:
    """Whether a word is said with a vowel sound first (an hour, an 18-year-old, an HVAC)."""
    if word[0].isdigit():
        digits = re.match(r"\d+", word).group()
        return digits[0] == "8" or digits in ("11", "18")
    if word.isupper() and len(word) <= 5:  # read letter by letter
        return word[0] in "AEFHILMNORSX"
    lower = word.lower()
    if lower.startswith(("uni", "use", "usu", "eu", "one", "once")):
        return False
    return lower.startswith(("hour", "honest", "heir")) or lower[0] in "aeiou"


def fix_articles(text: str) -> str:
    return _ARTICLE.sub(lambda m: f"{m.group(1)}{'n' if wants_an(m.group(2)) else ''} {m.group(2)}", text)


def render(template: str, slots: dict[str, object], pronoun: str) -> str:
    return fix_articles(template.format(**slots, **PRONOUNS[pronoun]))


def place_name(phrase: str) -> str:
    words = phrase.split()
    while len(words) > 1 and words[0] in PREPOSITIONS:
        words = words[1:]
    return " ".join(words)


def age_group(age: int) -> str:
    for limit, group in ((19, "teen"), (29, "young adult"), (44, "adult"), (64, "middle-aged")):
        if age <= limit:
            return group
    return "senior"


# -- choosing --------------------------------------------------------------


class Chooser:
    """Seeded choices that prefer the least-used option, so every list is spread evenly."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.uses: Counter = Counter()

    def pick(self, kind: str, options: list, owner: str = ""):
        """Least-used first; and, while it can, never the same option twice for one owner
        (an occupation or role), so its personas differ in more than the place and age."""
        fresh = [o for o in options if not self.uses[(kind, owner, o)]] if owner else []
        options = fresh or options
        least = min(self.uses[(kind, o)] for o in options)
        choice = self.rng.choice([o for o in options if self.uses[(kind, o)] == least])
        self.uses[(kind, choice)] += 1
        self.uses[(kind, owner, choice)] += 1
        return choice

    def pronoun(self) -> str:
        return self.rng.choices(list(PRONOUN_WEIGHTS), weights=list(PRONOUN_WEIGHTS.values()))[0]

    def stream(self, items: list) -> Iterator:
        """Items in a fresh shuffled order each round, forever."""
        while True:
            order = list(items)
            self.rng.shuffle(order)
            yield from order


def real_stage(chooser: Chooser, job: Occupation) -> str:
    if "student" in job.title:
        return "student"
    return "retired" if job.max_age >= 60 and chooser.rng.random() < RETIRED_SHARE else "work"


def real_persona(chooser: Chooser, parts: Components, job: Occupation) -> dict:
    stage = real_stage(chooser, job)
    age = chooser.rng.randint(66, 89) if stage == "retired" else chooser.rng.randint(job.min_age, job.max_age)
    years = chooser.rng.randint(3, age - job.min_age) if age - job.min_age >= 3 else 0
    required = set(job.setting.split("+")) - {"any"}
    places = [p for p in parts.places if required <= p[1]]
    if not places:
        raise FactoryError(f"occupation '{job.title}': no place in places.txt has the tags {sorted(required)}")
    goal_stage = {"work": "adult", "student": "student", "retired": "senior"}[stage]
    templates = [t for stages, t in parts.templates if stage in stages and (years or "{years}" not in t)]
    place = chooser.pick("place", places, job.title)[0]
    slots = {
        "n": age, "decade": DECADES[age // 10], "years": years, "title": job.title, "place": place,
        "duty": job.duty, "experience": "young" if age < 30 else "experienced" if age < 50 else "veteran",
        "interest": chooser.pick("interest", parts.interests, job.title),
        "goal": chooser.pick("goal", [g for s, g in parts.goals if s in ("any", goal_stage)], job.title),
    }  # fmt: skip
    text = render(chooser.pick("template", templates, job.title), slots, chooser.pronoun())
    tags = {"kind": "real", "occupation": job.title, "place": place_name(place), "age_group": age_group(age)}
    tags["stage"] = stage
    return {"persona": text, "tags": tags}


def story_persona(chooser: Chooser, parts: Components, role: StoryRole) -> dict:
    templates = [t for stages, t in parts.templates if "story" in stages]
    slots = {
        "role": role.role,
        "setting": role.setting,
        "duty": role.duty,
        "trait": chooser.pick("trait", parts.traits, role.role),
        "hook": chooser.pick("hook", parts.hooks, role.role),
    }
    text = render(chooser.pick("story template", templates, role.role), slots, role.pronoun or chooser.pronoun())
    tags = {"kind": "story", "occupation": role.role, "place": place_name(role.setting), "genre": role.genre}
    return {"persona": text, "tags": tags}


def distinct(rows: list[dict], wanted: int, kind: str) -> list[dict]:
    """The first `wanted` rows left after exact and near duplicates are dropped."""
    personas = [Persona(id=f"c{i}", text=row["persona"], source="candidate") for i, row in enumerate(rows)]
    kept = [int(p.id[1:]) for p in dedup_personas(personas, BUILD_THRESHOLD).kept]
    if len(kept) < wanted:
        raise FactoryError(f"only {len(kept)} distinct {kind} personas from {len(rows)} candidates; add components")
    return [rows[i] for i in kept[:wanted]]


def build(folder: Path, total: int = TOTAL, seed: int = SEED) -> list[dict]:
    parts = read_components(folder)
    chooser = Chooser(seed)
    n_story = round(total * STORY_SHARE)
    jobs, roles = chooser.stream(parts.occupations), chooser.stream(parts.roles)
    real = [real_persona(chooser, parts, next(jobs)) for _ in range(int((total - n_story) * OVERDRAW))]
    story = [story_persona(chooser, parts, next(roles)) for _ in range(int(n_story * OVERDRAW))]
    rows = distinct(real, total - n_story, "real") + distinct(story, n_story, "story")
    chooser.rng.shuffle(rows)  # mix kinds, so a file prefix is as varied as the whole
    library = [
        {"id": f"p{i:04d}", "persona": r["persona"], "source": LIBRARY_SOURCE, "tags": r["tags"]}
        for i, r in enumerate(rows, 1)
    ]
    check(library)
    return library


def check(library: list[dict]) -> None:
    texts = [row["persona"] for row in library]
    exact, near = exact_duplicate_pairs(texts), near_duplicate_pairs(texts, BUILD_THRESHOLD)
    if exact or near:
        raise FactoryError(f"library has {len(exact)} exact and {len(near)} near duplicate pairs")


def to_jsonl(library: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in library)


def summary(library: list[dict]) -> str:
    kinds = Counter(row["tags"]["kind"] for row in library)
    jobs = {row["tags"]["occupation"] for row in library if row["tags"]["kind"] == "real"}
    places = {row["tags"]["place"] for row in library if row["tags"]["kind"] == "real"}
    return (
        f"{len(library)} personas ({kinds['real']} real, {kinds['story']} story); "
        f"{len(jobs)} occupations, {len(places)} places"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file instead of writing it")
    parser.add_argument("--out", type=Path, default=None, help="output file (default: personas/library.jsonl)")
    args = parser.parse_args(argv)
    folder = personas_dir()
    out = args.out or folder / "library.jsonl"
    try:
        library = build(folder / "components")
    except FactoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    text = to_jsonl(library)
    if args.check:
        same = out.is_file() and out.read_text(encoding="utf-8") == text
        print(f"{out}: {'up to date' if same else 'differs from a fresh build; run scripts/build_personas.py'}")
        return 0 if same else 1
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}: {summary(library)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
