"""Response schemas built per script for the DM + player trajectory call.

The schema limits action names to the script's actions and parameter values to
the script's own vocabulary (every valid value, location and item it names), so
a model decoding under it cannot invent actions, yet can still pick a wrong
value or an action invalid where it stands: the mistakes AgentRefine trains on.
Values go on the wire in their declared types (values.py): an integer
parameter's valid values are offered as JSON numbers, a string parameter's as
text, so the player sends exactly what validation code is written against.
Every string and list is bounded: small models otherwise return empty lists or
ramble until max_tokens.

Known backend behaviour: llama.cpp's server keeps JSON objects as sorted maps, so
it generates properties in alphabetical order (`action` before `thought`),
whatever order the schema lists them in. So on the wire a step's keys carry a
numeric prefix that sorts in the order the model should think in (the player's
thought before its action, the DM's check before its verdict); `to_wire` and
`from_wire` translate at the boundary, and the rest of the code sees plain names.
"""

from __future__ import annotations

from typing import Any

from .script import Script
from .values import valid_typed

ERROR_TYPES = ["none", "parameter", "location", "logic"]

# Step field -> wire key; the prefixes sort in generation order (see above).
WIRE_KEYS = {"thought": "1_thought", "action": "2_action", "dm_thinking": "3_dm_thinking",
             "observation": "4_observation", "evaluation": "5_evaluation"}  # fmt: skip
FROM_WIRE = {wire: name for name, wire in WIRE_KEYS.items()}
MISSING_THOUGHTS = "missing_thoughts"  # the reply's field for the thoughts the story so far leaves open


def to_wire(step: dict[str, Any]) -> dict[str, Any]:
    """A step as the model reads and writes it (bookkeeping keys such as `injected` dropped)."""
    return {wire: step[name] for name, wire in WIRE_KEYS.items() if name in step}


def from_wire(step: dict[str, Any]) -> dict[str, Any]:
    return {FROM_WIRE.get(key, key): value for key, value in step.items()}


def script_vocabulary(script: Script) -> list[str]:
    """Every text a parameter could sensibly take in this script (string parameters'
    valid values, locations, items), sorted."""
    words: set[str] = set()
    for action in script.actions:
        for param in action.parameters:
            if param.type == "string":
                words.update(param.valid_values)
    for location in script.environment.locations:
        words.add(location.name)
        words.update(location.items)
    words.update(script.environment.player.inventory)
    return sorted(words)


def param_values(script: Script, name: str) -> list[Any]:
    """What the wire offers parameter `name`: the vocabulary (so wrong picks stay possible)
    and the typed valid values of every parameter of that name."""
    typed: list[Any] = []
    for action in script.actions:
        for param in action.parameters:
            if param.name == name and param.type != "string":
                typed.extend(v for v in valid_typed(param) if v not in typed)
    return script_vocabulary(script) + typed


def _bounded_text(max_length: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_length}


def action_schema(script: Script) -> dict[str, Any]:
    param_names = sorted({p.name for a in script.actions for p in a.parameters})
    params: dict[str, Any] = {
        "type": "object",
        "properties": {name: {"enum": param_values(script, name)} for name in param_names},
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"name": {"enum": [a.name for a in script.actions]}, "params": params},
        "required": ["name", "params"],
        "additionalProperties": False,
    }


def step_schema(script: Script) -> dict[str, Any]:
    """One player move and the DM's answer to it."""
    evaluation = {
        "type": "object",
        "properties": {"error": {"enum": ERROR_TYPES}, "task_done": {"type": "boolean"}},
        "required": ["error", "task_done"],
        "additionalProperties": False,
    }
    fields = {
        "thought": _bounded_text(300),
        "action": action_schema(script),
        "dm_thinking": _bounded_text(300),
        "observation": _bounded_text(300),
        "evaluation": evaluation,
    }
    return {
        "type": "object",
        "properties": {WIRE_KEYS[name]: spec for name, spec in fields.items()},
        "required": list(WIRE_KEYS.values()),
        "additionalProperties": False,
    }


def trajectory_schema(script: Script, min_steps: int = 3, max_steps: int = 10, missing_thoughts: int = 0) -> dict[str, Any]:
    """The reply: the next steps; with `missing_thoughts`, first the player's thoughts that the story
    so far leaves open (injected mistakes and the steps after them, inject.py), one per open slot, in order.
    `missing_thoughts` sorts before `steps`, so llama.cpp writes them first, as the story reads."""
    properties: dict[str, Any] = {}
    if missing_thoughts:
        properties[MISSING_THOUGHTS] = {"type": "array", "items": _bounded_text(300),
                                        "minItems": missing_thoughts, "maxItems": missing_thoughts}  # fmt: skip
    properties["steps"] = {"type": "array", "items": step_schema(script), "minItems": min_steps, "maxItems": max_steps}
    return {
        "title": "Trajectory",
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
