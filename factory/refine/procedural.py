"""The procedural script source: a valid, solvable script built from a persona without an LLM.

Why: a 135M model cannot write a consistent world (dangling names, goals no
action reaches), so on the embedded model the refine path ended with no script
at all. Here the world is built deterministically (seeded) from small
vocabularies (`procedural_worlds.json`): the persona's words pick a theme
(a mechanic gets a garage and a wrench, a chef a kitchen and flour), and the
seed draws the places, the items and the job. The LLM still plays every
trajectory; only the world is not its own. Scripts from here are labelled
(script id `PERSONA:procedural`) so a dataset can keep or drop them.

The world always has the same shape, which is what a task needs: the player
starts in one place holding a material, with a tool lying there; a second place
is a distractor; the job happens at a third place, in two steps: a preparing
action (needs the tool, sets `<object>_<prepared>`) and the task's own action
(needs the material and the prepared fact, sets `<object>_<done>`, the goal).
So the action that completes the task is the task's last action, and the
shortest plan is four steps: take, go, prepare, act (six was too long for
SmolLM2, which writes one or two steps per call).
"""

from __future__ import annotations

import json
import random
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from .narration import display, the
from .script import Script

WORLDS_FILE = Path(__file__).with_name("procedural_worlds.json")
SCRIPT_SUFFIX = "procedural"  # script ids are PERSONA:procedural
# Every action that takes a value takes it as `target`: the wire schema offers each parameter name
# to every action, and SmolLM2 filled both `item` and `place` on every call (a parameter error each time).
TARGET = "target"


@lru_cache(maxsize=1)
def themes() -> list[dict[str, Any]]:
    return json.loads(WORLDS_FILE.read_text())["themes"]


def persona_words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def pick_theme(text: str, rng: random.Random) -> dict[str, Any]:
    """The theme whose keywords the persona uses most; the last theme (home) when none match."""
    words = persona_words(text)
    scored = [(sum(k in words for k in t["keywords"]), t) for t in themes()]
    best = max(score for score, _ in scored)
    if best == 0:
        return themes()[-1]
    return rng.choice([t for score, t in scored if score == best])


def persona_role(text: str) -> str | None:
    """Who the persona is, from its opening words: "An auto mechanic in Mumbai, ..." -> "auto mechanic"."""
    match = re.match(
        r"\s*(?:an?|the)\s+([A-Za-z' -]{3,40}?)(?:\s+(?:in|at|on|from|who|whose|with)\b|[,.;])", text, re.I
    )
    return match.group(1).strip() if match else None


def _go(places: list[str]) -> dict[str, Any]:
    return {
        "name": "go",
        "description": "Walk to another place.",
        "parameters": [{"name": TARGET, "valid_values": places, "description": "where to go"}],
        "effects": [{"kind": "move_to", "value": TARGET}],
    }


def _take(items: list[str]) -> dict[str, Any]:
    return {
        "name": "take",
        "description": "Pick up an item that lies where you stand.",
        "parameters": [{"name": TARGET, "valid_values": items, "description": "what to pick up"}],
        "preconditions": [{"kind": "param_at_location", "value": TARGET}],
        "effects": [{"kind": "take", "value": TARGET}],
    }


def _job_action(verb: str, description: str, needs: list[dict], fact: str) -> dict[str, Any]:
    return {"name": verb, "description": description, "preconditions": needs,
            "effects": [{"kind": "set_fact", "value": fact}]}  # fmt: skip


def build_script(persona_id: str, text: str, seed: int = 0) -> Script:
    """A script for this persona; the same persona, id and seed give the same script."""
    rng = random.Random(f"{seed}:{persona_id}:procedural")
    theme = pick_theme(text, rng)
    start, store, site = rng.sample(theme["places"], 3)
    tool, material = rng.sample(theme["tools"], 2)
    prep, prepped, act, done, thing = rng.choice(theme["jobs"])
    ready, finished = f"{thing}_{prepped}", f"{thing}_{done}"
    places = rng.sample([start, store, site], 3)
    actions = [
        _go(places),
        _take(sorted([tool, material])),
        _job_action(prep, f"{display(prep).capitalize()} {the(thing)} with {the(tool)}.",
                    [{"kind": "player_at", "value": site}, {"kind": "has_item", "value": tool}], ready),
        _job_action(act, f"{display(act).capitalize()} {the(thing)} once it is {display(prepped)}; it takes {the(material)}.",
                    [{"kind": "player_at", "value": site}, {"kind": "has_item", "value": material},
                     {"kind": "fact_true", "value": ready}], finished),
    ]  # fmt: skip
    role = persona_role(text)
    opener = f"You are {'an' if (role or 'x')[0].lower() in 'aeiou' else 'a'} {role}. " if role else ""
    # The task names its steps in order: a small model follows a plan it reads far better than one it must find.
    task = (
        f"{opener}{display(act).capitalize()} {the(thing)} in {the(site)}: take {the(tool)} here, go to "
        f"{the(site)}, {display(prep)} {the(thing)}, then {display(act)} it."
    )
    locations = [
        {"name": start, "description": "Your day starts here.", "items": [tool]},
        {"name": store, "description": "Shelves of supplies, none of them needed today.", "items": []},
        {"name": site, "description": f"You are to {display(act)} {the(thing)} here.", "items": []},
    ]
    draft = {
        "environment": {"locations": locations, "player": {"location": start, "inventory": [material]},
                        "facts": [{"name": ready, "initially": False}, {"name": finished, "initially": False}]},
        "task": task, "actions": actions,
        "goal": {"conditions": [{"kind": "fact_true", "value": finished}]},
    }  # fmt: skip
    return Script(persona_id=persona_id, **draft)
