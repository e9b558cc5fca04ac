"""Response schemas built per script for the DM + player trajectory call.

The schema limits action names to the script's actions and parameter values to
the script's own vocabulary (every valid value, location and item it names), so
a model decoding under it cannot invent actions, yet can still pick a wrong
value or an action invalid where it stands: the mistakes AgentRefine trains on.
Each action is its own `anyOf` branch carrying exactly its parameters, so a
parameter can be neither missing nor extra (SmolLM2 filled every parameter name
on every call when one object offered them all).
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

from .script import Action, Script
from .values import valid_typed

ERROR_TYPES = ["none", "parameter", "location", "logic"]
TEXT_MAX = 300  # characters in a thought, a DM check, an observation or a missing thought

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


def _params_schema(script: Script, action: Action) -> dict[str, Any]:
    """Exactly this action's parameters, all required: no missing or extra parameter can be decoded.
    Each value is the script's vocabulary plus the parameter's typed valid values, so a wrong value
    (a parameter error the data teaches) stays possible."""
    vocabulary = script_vocabulary(script)
    properties = {}
    for param in action.parameters:
        typed = [v for v in valid_typed(param) if v not in vocabulary] if param.type != "string" else []
        properties[param.name] = {"enum": vocabulary + typed}
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def action_schema(script: Script) -> dict[str, Any]:
    """One branch per action (`anyOf`, name fixed by `const`): llama.cpp's grammar then ties the
    parameters to the action chosen."""
    branches = [
        {
            "type": "object",
            "properties": {"name": {"const": action.name}, "params": _params_schema(script, action)},
            "required": ["name", "params"],
            "additionalProperties": False,
        }
        for action in script.actions
    ]
    return {"anyOf": branches}


def step_schema(script: Script) -> dict[str, Any]:
    """One player move and the DM's answer to it."""
    evaluation = {
        "type": "object",
        "properties": {"error": {"enum": ERROR_TYPES}, "task_done": {"type": "boolean"}},
        "required": ["error", "task_done"],
        "additionalProperties": False,
    }
    fields = {
        "thought": _bounded_text(TEXT_MAX),
        "action": action_schema(script),
        "dm_thinking": _bounded_text(TEXT_MAX),
        "observation": _bounded_text(TEXT_MAX),
        "evaluation": evaluation,
    }
    return {
        "type": "object",
        "properties": {WIRE_KEYS[name]: spec for name, spec in fields.items()},
        "required": list(WIRE_KEYS.values()),
        "additionalProperties": False,
    }


def trajectory_schema(
    script: Script, min_steps: int = 3, max_steps: int = 10, missing_thoughts: int = 0
) -> dict[str, Any]:
    """The reply: the next steps; with `missing_thoughts`, first the player's thoughts that the story
    so far leaves open (injected mistakes and the steps after them, inject.py), one per open slot, in order.
    `missing_thoughts` sorts before `steps`, so llama.cpp writes them first, as the story reads."""
    properties: dict[str, Any] = {}
    if missing_thoughts:
        properties[MISSING_THOUGHTS] = {"type": "array", "items": _bounded_text(TEXT_MAX),
                                        "minItems": missing_thoughts, "maxItems": missing_thoughts}  # fmt: skip
    properties["steps"] = {"type": "array", "items": step_schema(script), "minItems": min_steps, "maxItems": max_steps}
    return {
        "title": "Trajectory",
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


# A scaffolded step on the wire (scaffold.py): the world's action, the player's thought, the world's answer.
# The prefixes sort in the order the model reads and writes them: it sees the move, writes the thought that
# leads to it, then reads what the DM said, which the next thought reacts to.
SCAFFOLD_KEYS = {"action": "1_action", "thought": "2_thought", "observation": "3_observation"}


def scaffold_schema(
    calls: list[str], observations: list[str], min_thought: int = 20, max_thought: int = 150
) -> dict[str, Any]:
    """The scaffolded reply: one step per planned move, action and observation fixed (`const`), only the
    thought free (bounded: a small model otherwise rambles or writes a word)."""
    # First person from the first word (SmolLM2 otherwise narrates "You see ..." as the DM does); the pattern
    # is bounded itself, since llama.cpp's grammar ignores maxLength beside a pattern.
    thought = {"type": "string", "pattern": f"^I [A-Za-z0-9 ,.;:'()_=-]{{{min_thought},{max_thought - 2}}}$"}
    items = [
        {
            "type": "object",
            "properties": {
                SCAFFOLD_KEYS["action"]: {"const": call},
                SCAFFOLD_KEYS["thought"]: thought,
                SCAFFOLD_KEYS["observation"]: {"const": observation},
            },
            "required": list(SCAFFOLD_KEYS.values()),
            "additionalProperties": False,
        }
        for call, observation in zip(calls, observations)
    ]
    steps = {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    return {"title": "ScaffoldedTrajectory", "type": "object", "properties": {"steps": steps},
            "required": ["steps"], "additionalProperties": False}  # fmt: skip
