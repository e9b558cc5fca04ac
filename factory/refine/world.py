"""Replaying a script's world: is an action valid here and now, and what changes.

The verifier uses this to check each player action against the declarative
rules, and to check the DM's evaluation against the result. Error types follow
the AgentRefine paper: parameter, location and logic errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .script import Action, Precondition, Script

ErrorType = Literal["parameter", "location", "logic"]


@dataclass
class WorldState:
    location: str
    inventory: list[str]
    items_at: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def initial(cls, script: Script) -> "WorldState":
        env = script.environment
        return cls(env.player.location, list(env.player.inventory), {loc.name: list(loc.items) for loc in env.locations})

    def copy(self) -> "WorldState":
        return WorldState(self.location, list(self.inventory), {k: list(v) for k, v in self.items_at.items()})


@dataclass
class ActionCheck:
    ok: bool
    error_type: ErrorType | None = None
    reason: str = ""


def _coerce(value: Any, kind: str) -> str | None:
    """The parameter value as the string form used in valid_values, or None if the type is wrong."""
    if kind == "boolean":
        return str(value).lower() if isinstance(value, bool) or str(value).lower() in ("true", "false") else None
    if kind in ("integer", "number"):
        try:
            number = float(value)
        except (TypeError, ValueError):
            return None
        if kind == "integer" and not number.is_integer():
            return None
        return str(int(number)) if number.is_integer() else str(number)
    return value if isinstance(value, str) else None


def check_parameters(action: Action, params: dict[str, Any]) -> ActionCheck:
    expected = {p.name for p in action.parameters}
    missing, extra = expected - params.keys(), params.keys() - expected
    if missing or extra:
        detail = ", ".join([*(f"missing '{m}'" for m in sorted(missing)), *(f"unexpected '{e}'" for e in sorted(extra))])
        return ActionCheck(False, "parameter", f"{action.name}: {detail}")
    for spec in action.parameters:
        value = _coerce(params[spec.name], spec.type)
        valid = {_coerce(v, spec.type) for v in spec.valid_values}
        if value is None or value not in valid:
            return ActionCheck(False, "parameter", f"{action.name}: '{params[spec.name]}' is not a valid {spec.name}")
    return ActionCheck(True)


def _precondition_holds(rule: Precondition, params: dict[str, Any], state: WorldState) -> ActionCheck:
    if rule.kind == "player_at" and state.location != rule.value:
        return ActionCheck(False, "location", f"only possible at {rule.value}; the player is at {state.location}")
    if rule.kind == "has_item" and rule.value not in state.inventory:
        return ActionCheck(False, "logic", f"needs {rule.value}, which the player does not hold")
    if rule.kind == "param_at_location":
        item = str(params.get(rule.value))
        if item not in state.items_at.get(state.location, []):
            return ActionCheck(False, "location", f"there is no {item} at {state.location}")
    if rule.kind == "param_in_inventory" and str(params.get(rule.value)) not in state.inventory:
        return ActionCheck(False, "logic", f"the player does not hold {params.get(rule.value)}")
    return ActionCheck(True)


def check_action(script: Script, state: WorldState, name: str, params: dict[str, Any]) -> ActionCheck:
    """Whether the player may take this action with these parameters, in this state."""
    action = script.action(name)
    if action is None:
        return ActionCheck(False, "logic", f"'{name}' is not an available action")
    checked = check_parameters(action, params)
    if not checked.ok:
        return checked
    for rule in action.preconditions:
        held = _precondition_holds(rule, params, state)
        if not held.ok:
            return ActionCheck(False, held.error_type, f"{name}: {held.reason}")
    return ActionCheck(True)


def apply_action(script: Script, state: WorldState, name: str, params: dict[str, Any]) -> WorldState:
    """The state after a valid action (callers check validity first)."""
    after = state.copy()
    for effect in script.action(name).effects:
        value = str(params[effect.param])
        if effect.kind == "move_to":
            after.location = value
        elif effect.kind == "take" and value in after.items_at.get(after.location, []):
            after.items_at[after.location].remove(value)
            after.inventory.append(value)
        elif effect.kind == "drop" and value in after.inventory:
            after.inventory.remove(value)
            after.items_at.setdefault(after.location, []).append(value)
    return after


def format_action(name: str, params: dict[str, Any]) -> str:
    """An action call as the player writes it: name(key=value, ...)."""
    return f"{name}({', '.join(f'{k}={v}' for k, v in params.items())})"


def goal_reached(script: Script, state: WorldState) -> bool | None:
    """True/False when the script declares a goal; None when only the DM can judge."""
    if not script.goal.conditions:
        return None
    return all(_precondition_holds(rule, {}, state).ok for rule in script.goal.conditions)
