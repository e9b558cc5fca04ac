"""Replaying a script's world: one step function, `check -> apply -> goal`.

`step(script, state, name, params, extra)` is the only place that decides what
an action does: the verifier (verify.py), the world-judged DM (grounding.py),
error injection (inject.py), the solvability search (solvable.py, without
validation code) and `factory eval` and RL rollouts (factory/envs/worlds.py) all call it. It
checks the call (declarative rules, then the optional extra check such as
validation code in the sandbox, which receives the values in their declared
types, see values.py), applies the effects of a valid call, and says whether
the goal holds afterwards. Error types follow the AgentRefine paper:
parameter, location and logic errors, and an action the script does not have is
its own type, `unknown_action` (as `factory eval` counts it). A refusal's `reason` is what the DM
tells the player, in the second person and in one of a few phrasings
(narration.py; a missing fact in words, prose.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from .narration import display, refusal, rule_words, the
from .prose import fact_refusal
from .script import Action, Precondition, Script
from .values import typed_params

ErrorType = Literal["parameter", "location", "logic", "unknown_action"]

# An extra check of a valid call, e.g. its validation code run in the sandbox:
# (action name, typed params, state) -> (ok, reason); None when it has nothing to say.
ExtraCheck = Callable[[str, dict[str, Any], "WorldState"], "tuple[bool, str] | None"]


@dataclass
class WorldState:
    location: str
    inventory: list[str]
    items_at: dict[str, list[str]] = field(default_factory=dict)
    facts: set[str] = field(default_factory=set)  # the declared facts that are true now

    @classmethod
    def initial(cls, script: Script) -> "WorldState":
        env = script.environment
        items = {loc.name: list(loc.items) for loc in env.locations}
        return cls(env.player.location, list(env.player.inventory), items, {f.name for f in env.facts if f.initially})

    def copy(self) -> "WorldState":
        return WorldState(
            self.location, list(self.inventory), {k: list(v) for k, v in self.items_at.items()}, set(self.facts)
        )

    def key(self) -> tuple:
        """A hashable identity, for searches and loop detection."""
        items = tuple(sorted((k, tuple(sorted(v))) for k, v in self.items_at.items()))
        return self.location, tuple(sorted(self.inventory)), items, tuple(sorted(self.facts))

    def items_here(self) -> list[str]:
        return list(self.items_at.get(self.location, []))


@dataclass
class ActionCheck:
    ok: bool
    error_type: ErrorType | None = None
    reason: str = ""  # what the DM tells the player
    rule: str = ""  # the rule broken, in plain words, for the DM's own notes
    params: dict[str, Any] | None = None  # the call's values in their declared types, when they are valid
    failed: str = ""  # what refused it: a precondition kind, "already_held", "parameter", "unknown_action", "code"


@dataclass
class Step:
    """One action through the world: its check, the state after it, and whether the goal
    holds then (True/False; None when the script declares no goal and only a DM can judge)."""

    check: ActionCheck
    after: WorldState
    done: bool | None


def check_parameters(action: Action, params: dict[str, Any], key: Any = "") -> ActionCheck:
    """The call's parameters against the action's; `key` varies the refusal's wording (narration.pick)."""
    expected = {p.name for p in action.parameters}
    missing, extra = sorted(expected - params.keys()), sorted(params.keys() - expected)
    act = display(action.name)
    if missing:
        return ActionCheck(False, "parameter", refusal("missing_param", key, action=act, param=display(missing[0])),
                           f"{action.name} takes {', '.join(sorted(expected))}")  # fmt: skip
    if extra:
        return ActionCheck(False, "parameter", refusal("unexpected_param", key, action=act, param=display(extra[0])),
                           f"{action.name} takes {', '.join(sorted(expected)) or 'no parameters'}")  # fmt: skip
    typed = typed_params(action, params)
    if isinstance(typed, str):
        spec = next(p for p in action.parameters if p.name == typed)
        told = refusal("invalid_value", key, action=act, value=display(params[typed]), param=display(typed))
        return ActionCheck(False, "parameter", told, f"valid {typed} values: {', '.join(spec.valid_values)}")
    return ActionCheck(True, params=typed)


def _precondition_holds(
    script: Script, rule: Precondition, params: dict[str, Any], state: WorldState, key: Any = ""
) -> ActionCheck:
    here = the(state.location)
    if rule.kind == "player_at" and state.location != rule.value:
        return ActionCheck(False, "location", refusal("player_at", key, place=the(rule.value), here=here))
    if rule.kind == "has_item" and rule.value not in state.inventory:
        return ActionCheck(False, "logic", refusal("has_item", key, item=the(rule.value)))
    item = params.get(rule.value)
    if rule.kind == "param_at_location" and str(item) in state.inventory:  # not "there is none here": it is held
        return ActionCheck(False, "logic", refusal("already_held", key, item=the(item)), failed="already_held")
    if rule.kind == "param_at_location" and str(item) not in state.items_here():
        return ActionCheck(False, "location", refusal("param_at_location", key, item=the(item), here=here))
    if rule.kind == "param_in_inventory" and str(params.get(rule.value)) not in state.inventory:
        return ActionCheck(False, "logic", refusal("param_in_inventory", key, item=the(params.get(rule.value))))
    if rule.kind in ("fact_true", "fact_false") and (rule.value in state.facts) != (rule.kind == "fact_true"):
        return ActionCheck(False, "logic", fact_refusal(script, rule.value, rule.kind == "fact_true", key))
    return ActionCheck(True)


def check_action(script: Script, state: WorldState, name: str, params: dict[str, Any]) -> ActionCheck:
    """Whether the declarative rules allow this call here and now (no validation code)."""
    action = script.action(name)
    key = (script.task, name, state.key())  # the same refusal in another row or state may read otherwise
    if action is None:
        return ActionCheck(
            False,
            "unknown_action",
            refusal("unknown_action", key, action=display(name)),
            f"'{name}' is not an action",
            failed="unknown_action",
        )
    checked = check_parameters(action, params, key)
    if not checked.ok:
        checked.failed = "parameter"
        return checked
    for rule in action.preconditions:
        held = _precondition_holds(script, rule, checked.params, state, key)
        if not held.ok:
            held.failed = held.failed or rule.kind
            item = checked.params.get(rule.value)  # an item already held is refused for that, not for where it is
            held.rule = (
                f"the player already carries {item}"
                if held.failed == "already_held"
                else f"{name} is allowed only when {rule_words(rule)}"
            )
            return held
    return checked


def apply_action(script: Script, state: WorldState, name: str, params: dict[str, Any]) -> WorldState:
    """The state after a valid call (callers check validity first; `step` does both)."""
    after = state.copy()
    for effect in script.action(name).effects:
        value = str(params.get(effect.value))
        if effect.kind == "move_to":
            after.location = value
        elif effect.kind == "take" and value in after.items_here():
            after.items_at[after.location].remove(value)
            after.inventory.append(value)
        elif effect.kind == "drop" and value in after.inventory:
            after.inventory.remove(value)
            after.items_at.setdefault(after.location, []).append(value)
        elif effect.kind == "set_fact":
            after.facts.add(effect.value)
        elif effect.kind == "clear_fact":
            after.facts.discard(effect.value)
    return after


def goal_reached(script: Script, state: WorldState) -> bool | None:
    """True/False when the script declares a goal; None when only the DM can judge."""
    if not script.goal.conditions:
        return None
    return all(_precondition_holds(script, rule, {}, state).ok for rule in script.goal.conditions)


def step(script: Script, state: WorldState, name: str, params: dict[str, Any], extra: ExtraCheck | None = None) -> Step:
    """check -> apply -> goal: the one step function every consumer uses."""
    checked = check_action(script, state, name, params)
    if checked.ok and extra is not None:
        outcome = extra(name, checked.params, state)
        if outcome is not None and not outcome[0]:
            checked = ActionCheck(False, "logic", outcome[1], "the validation code refuses it", failed="code")
    if not checked.ok:
        return Step(checked, state, False)
    after = apply_action(script, state, name, checked.params)
    return Step(checked, after, goal_reached(script, after))


def format_action(name: str, params: dict[str, Any]) -> str:
    """An action call as the player writes it: name(key=value, ...)."""
    return f"{name}({', '.join(f'{k}={v}' for k, v in params.items())})"
