"""The AgentRefine script: an environment, a task and the actions available.

Each action carries declarative rules the verifier checks without running code
(parameter types and valid values, preconditions on where the player stands
and what it holds) and effects that update the world, so a trajectory can be
replayed and checked step by step. LLM-written validation code, when present,
runs only in the sandbox; the declarative rules are what make small models
useful, since they need no code at all.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints, model_validator

Name = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z][A-Za-z0-9_ -]*$")
# Every string the LLM writes has a bound: under constrained decoding a small model
# can run on inside an unbounded string until max_tokens cuts the reply off.
Entry = Annotated[str, StringConstraints(max_length=60)]


class Location(BaseModel):
    name: str = Name
    description: str = Field("", max_length=300)
    items: list[Entry] = Field(default_factory=list, max_length=8)


class PlayerState(BaseModel):
    location: str = Name
    inventory: list[Entry] = Field(default_factory=list, max_length=8)


class Environment(BaseModel):
    locations: list[Location] = Field(min_length=1, max_length=8)
    player: PlayerState


class Parameter(BaseModel):
    name: str = Name
    type: Literal["string", "integer", "number", "boolean"] = "string"
    valid_values: list[Entry] = Field(min_length=1, max_length=12, description="every value that is accepted")
    description: str = Field("", max_length=200)


class Precondition(BaseModel):
    """`player_at`: the player stands at `value`; `has_item`: holds `value`;
    `param_at_location`: the item named by parameter `value` is where the player stands;
    `param_in_inventory`: the item named by parameter `value` is held."""

    kind: Literal["player_at", "has_item", "param_at_location", "param_in_inventory"]
    value: str = Field(min_length=1, max_length=40)


class Effect(BaseModel):
    """`move_to`: the player goes to the location named by parameter `param`;
    `take` / `drop`: the item named by `param` moves into / out of the inventory."""

    kind: Literal["move_to", "take", "drop"]
    param: str = Field(min_length=1, max_length=40)


class Action(BaseModel):
    name: str = Name
    description: str = Field(min_length=1, max_length=300)
    parameters: list[Parameter] = Field(default_factory=list, max_length=3)
    preconditions: list[Precondition] = Field(default_factory=list, max_length=3)
    effects: list[Effect] = Field(default_factory=list, max_length=3)
    validation_code: str | None = Field(None, max_length=4000)


class Goal(BaseModel):
    """The task is done when every condition holds (same kinds as preconditions)."""

    conditions: list[Precondition] = Field(default_factory=list, max_length=4)


class ScriptDraft(BaseModel):
    """What the script writer produces; `Script` adds where it came from."""

    environment: Environment
    task: str = Field(min_length=5, max_length=500)
    actions: list[Action] = Field(min_length=1, max_length=10)
    goal: Goal = Field(default_factory=Goal)

    @model_validator(mode="after")
    def _names_refer_to_things_that_exist(self) -> "ScriptDraft":
        problems = script_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def action(self, name: str) -> Action | None:
        return next((a for a in self.actions if a.name == name), None)

    def location(self, name: str) -> Location | None:
        return next((loc for loc in self.environment.locations if loc.name == name), None)


class DeclarativeScriptDraft(ScriptDraft):
    """A draft whose wire schema leaves out validation code: for models too small to
    write working code, the declarative rules alone verify the script."""

    @classmethod
    def llm_schema(cls) -> dict:
        schema = cls.model_json_schema()
        schema["$defs"]["Action"]["properties"].pop("validation_code", None)
        schema["$defs"]["Goal"]["properties"]["conditions"]["minItems"] = 1  # the only judge of completion
        schema["required"] = [*schema.get("required", []), "goal"]
        return schema


class Script(ScriptDraft):
    persona_id: str | None = None


def script_problems(script: ScriptDraft) -> list[str]:
    """Dangling names: the checks a schema alone cannot express."""
    problems = []
    places = {loc.name for loc in script.environment.locations}
    if script.environment.player.location not in places:
        problems.append(f"player starts at unknown location '{script.environment.player.location}'")
    names = [a.name for a in script.actions]
    if len(set(names)) != len(names):
        problems.append("action names repeat")
    for action in script.actions:
        params = {p.name for p in action.parameters}
        for rule in [*action.effects, *action.preconditions]:
            ref = rule.param if isinstance(rule, Effect) else rule.value
            if (isinstance(rule, Effect) or rule.kind.startswith("param_")) and ref not in params:
                problems.append(f"action '{action.name}' refers to missing parameter '{ref}'")
            if isinstance(rule, Precondition) and rule.kind == "player_at" and ref not in places:
                problems.append(f"action '{action.name}' requires unknown location '{ref}'")
    for condition in script.goal.conditions:
        if condition.kind.startswith("param_"):
            problems.append(f"goal condition '{condition.kind}' needs an action's parameters; use player_at or has_item")
        elif condition.kind == "player_at" and condition.value not in places:
            problems.append(f"goal requires unknown location '{condition.value}'")
    return problems
