"""Response schemas built per script for the DM + player trajectory call.

The schema limits action names to the script's actions and each action's
parameters to their own values: the valid ones and those a player could take for
them (slips.confusions: another place for a place, an item like a right one, a
number just past the valid ones), so a model decoding under it cannot invent
actions or send a destination to a parameter that takes an amount, yet can still
pick a wrong value or an action invalid where it stands: the mistakes AgentRefine
trains on. A parameter with one valid value offers only it (the action list
shows there is no choice). Each action is its own `anyOf` branch carrying
exactly its parameters, so a parameter can be neither missing nor extra (SmolLM2
filled every parameter name on every call when one object offered them all).
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

from .script import Action, Parameter, Script
from .slips import confusions
from .values import valid_typed

ERROR_TYPES = ["none", "parameter", "location", "logic"]
TEXT_MAX = 300  # characters in a thought, a DM check, an observation or a missing thought

# Step field -> wire key; the prefixes sort in generation order (see above).
WIRE_KEYS = {"thought": "1_thought", "action": "2_action", "dm_thinking": "3_dm_thinking",
             "observation": "4_observation", "evaluation": "5_evaluation"}  # fmt: skip
FROM_WIRE = {wire: name for name, wire in WIRE_KEYS.items()}
MISSING_THOUGHTS = "missing_thoughts"  # the reply's field for the thoughts the story so far leaves open
MISSING_LINES = "missing_dm_lines"  # and for the DM's lines to the player it leaves open (injected mistakes)


def to_wire(step: dict[str, Any]) -> dict[str, Any]:
    """A step as the model reads and writes it (bookkeeping keys such as `injected` dropped)."""
    return {wire: step[name] for name, wire in WIRE_KEYS.items() if name in step}


def from_wire(step: dict[str, Any]) -> dict[str, Any]:
    return {FROM_WIRE.get(key, key): value for key, value in step.items()}


def param_values(script: Script, param: Parameter) -> list[Any]:
    """What the wire offers a parameter: its typed valid values, then the values a player could take
    for them (so a wrong pick of the right kind stays possible)."""
    valid = valid_typed(param)
    return valid + [v for v in confusions(script, param) if v not in valid]


def _bounded_text(max_length: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_length}


def _params_schema(script: Script, action: Action) -> dict[str, Any]:
    """Exactly this action's parameters, all required: no missing or extra parameter can be decoded.
    Each offers its own values (`param_values`), so a wrong value of the right kind (a parameter error
    the data teaches) stays possible and one of another kind does not."""
    properties = {param.name: {"enum": param_values(script, param)} for param in action.parameters}
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
    script: Script, min_steps: int = 3, max_steps: int = 10, missing_thoughts: int = 0, missing_lines: int = 0
) -> dict[str, Any]:
    """The reply: the next steps; with `missing_lines` and `missing_thoughts`, first the DM's lines and the
    player's thoughts that the story so far leaves open (injected mistakes and the steps after them,
    inject.py), one per open slot, in order. Both sort before `steps`, so llama.cpp writes them first."""
    properties: dict[str, Any] = {}
    for key, count in ((MISSING_LINES, missing_lines), (MISSING_THOUGHTS, missing_thoughts)):
        if count:
            properties[key] = {"type": "array", "items": _bounded_text(TEXT_MAX), "minItems": count, "maxItems": count}
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
