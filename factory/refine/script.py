"""The AgentRefine script: an environment, a task and the actions available.

The world's state is where the player stands, what it holds, where the items
lie, and named facts (booleans such as `faucet_installed`: declared in the
environment with their value at the start, or simply set by an action's effect,
then false at the start). Each action carries declarative
rules the verifier checks without running code (parameter types and valid
values, preconditions over place, items and facts) and effects that update the
world (move, take, drop, set or clear a fact), so a trajectory can be replayed
and checked step by step. The goal is a list of conditions over the same state:
a task such as "install the faucet" is a fact its last action sets. Valid
values are text; every consumer gets them in the declared type (`values.py`).
LLM-written validation code, when present, runs only in the sandbox; the
declarative rules are what make small models useful, since they need no code.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import AliasChoices, BaseModel, Field, StringConstraints, model_validator

# The repeat is bounded in the pattern itself: llama.cpp's grammar honours a pattern and ignores
# maxLength beside it, so `*` let a small model write a 5,000-character name.
Name = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z][A-Za-z0-9_ -]{0,39}$")
# Every string the LLM writes has a bound: under constrained decoding a small model
# can run on inside an unbounded string until max_tokens cuts the reply off.
Entry = Annotated[str, StringConstraints(max_length=60)]


class Location(BaseModel):
    name: str = Name
    description: str = Field("", max_length=300)
    items: list[Entry] = Field(default_factory=list, max_length=8)


class Fact(BaseModel):
    """A named true/false fact about the world, e.g. `faucet_installed`."""

    name: str = Name
    initially: bool = False


class PlayerState(BaseModel):
    location: str = Name
    inventory: list[Entry] = Field(default_factory=list, max_length=8)


class Environment(BaseModel):
    locations: list[Location] = Field(min_length=1, max_length=8)
    player: PlayerState
    facts: list[Fact] = Field(default_factory=list, max_length=8)


class Parameter(BaseModel):
    name: str = Name
    type: Literal["string", "integer", "number", "boolean"] = "string"
    valid_values: list[Entry] = Field(min_length=1, max_length=12, description="every value that is accepted")
    description: str = Field("", max_length=200)


class Precondition(BaseModel):
    """`player_at`: the player stands at `value`; `has_item`: holds `value`;
    `param_at_location`: the item named by parameter `value` is where the player stands;
    `param_in_inventory`: the item named by parameter `value` is held;
    `fact_true` / `fact_false`: the fact named `value` is true / false."""

    kind: Literal["player_at", "has_item", "param_at_location", "param_in_inventory", "fact_true", "fact_false"]
    value: str = Field(min_length=1, max_length=40)


class Effect(BaseModel):
    """`move_to`: the player goes to the location named by parameter `value`;
    `take` / `drop`: the item named by parameter `value` moves into / out of the inventory;
    `set_fact` / `clear_fact`: the fact named `value` becomes true / false.
    (Scripts written before facts existed say `param`; it is read as `value`.)"""

    kind: Literal["move_to", "take", "drop", "set_fact", "clear_fact"]
    value: str = Field(min_length=1, max_length=40, validation_alias=AliasChoices("value", "param"))


class Action(BaseModel):
    name: str = Name
    description: str = Field(min_length=1, max_length=300)
    parameters: list[Parameter] = Field(default_factory=list, max_length=3)
    preconditions: list[Precondition] = Field(default_factory=list, max_length=3)
    effects: list[Effect] = Field(default_factory=list, max_length=3)
    validation_code: str | None = Field(None, max_length=4000)


GoalKind = Literal["player_at", "has_item", "fact_true", "fact_false"]
GOAL_KINDS = get_args(GoalKind)


# A goal has no call whose parameters a `param_*` kind could name: its schema offers only the kinds
# the script prompt tells the writer goals use (the docstring below is the schema's description).
class GoalCondition(Precondition):
    """`player_at`: the player stands at `value`; `has_item`: holds `value`;
    `fact_true` / `fact_false`: the fact named `value` is true / false."""

    kind: GoalKind


class Goal(BaseModel):
    """The task is done when every condition holds (`player_at`, `has_item`, `fact_true`,
    `fact_false`); the action that makes the last of them hold is the task's last action."""

    conditions: list[GoalCondition] = Field(default_factory=list, max_length=4)


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

    def fact_names(self) -> list[str]:
        """Every fact the world knows: declared in the environment, or set or cleared by an
        action (then false at the start, so only facts true at the start need declaring)."""
        names = [f.name for f in self.environment.facts]
        for action in self.actions:
            names += [e.value for e in action.effects if e.kind in ("set_fact", "clear_fact") and e.value not in names]
        return names


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


PARAM_RULES = ("param_at_location", "param_in_inventory", "move_to", "take", "drop")
FACT_RULES = ("fact_true", "fact_false", "set_fact", "clear_fact")


def script_problems(script: ScriptDraft) -> list[str]:
    """Dangling names: the checks a schema alone cannot express."""
    problems = []
    places = {loc.name for loc in script.environment.locations}
    if script.environment.player.location not in places:
        problems.append(f"player starts at unknown location '{script.environment.player.location}'")
    names = [a.name for a in script.actions]
    if len(set(names)) != len(names):
        problems.append("action names repeat")
    declared = [f.name for f in script.environment.facts]
    if len(set(declared)) != len(declared):
        problems.append("fact names repeat")
    facts = set(script.fact_names())
    for action in script.actions:
        params = {p.name for p in action.parameters}
        for rule in [*action.preconditions, *action.effects]:
            if rule.kind in PARAM_RULES and rule.value not in params:
                problems.append(f"action '{action.name}' refers to missing parameter '{rule.value}'")
            elif rule.kind in FACT_RULES and rule.value not in facts:
                problems.append(
                    f"action '{action.name}' uses fact '{rule.value}', which no action sets and environment.facts does not declare"
                )
            elif rule.kind == "player_at" and rule.value not in places:
                problems.append(f"action '{action.name}' requires unknown location '{rule.value}'")
    for condition in script.goal.conditions:
        if condition.kind == "player_at" and condition.value not in places:
            problems.append(f"goal requires unknown location '{condition.value}'")
        elif condition.kind in FACT_RULES and condition.value not in facts:
            problems.append(
                f"goal uses fact '{condition.value}', which no action sets and environment.facts does not declare"
            )
    return problems + _facts_never_changed(script)


def _facts_never_changed(script: ScriptDraft) -> list[str]:
    """A fact that must become true (or false) but that no action sets (or clears)."""
    true_at_start = {f.name for f in script.environment.facts if f.initially}
    start = {name: name in true_at_start for name in script.fact_names()}
    made = {
        (e.value, e.kind == "set_fact")
        for a in script.actions
        for e in a.effects
        if e.kind in ("set_fact", "clear_fact")
    }
    needed = [c for a in script.actions for c in a.preconditions] + list(script.goal.conditions)
    problems = []
    for rule in needed:
        if rule.kind not in ("fact_true", "fact_false") or rule.value not in start:
            continue
        wanted = rule.kind == "fact_true"
        if start[rule.value] != wanted and (rule.value, wanted) not in made:
            verb = "sets" if wanted else "clears"
            problem = f"fact '{rule.value}' must be {str(wanted).lower()} but no action {verb} it"
            if problem not in problems:
                problems.append(problem)
    return problems
