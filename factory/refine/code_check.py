"""Validation code, checked and used only through the sandbox (DESIGN rule 4).

A script's action may carry `def validate(params, state)` returning True/False
(or [bool, message]). Script verification calls it in the sandbox on valid
calls (it must accept) and on invalid ones (a value outside the valid list, a
state that breaks a precondition: it must reject). During trajectory
verification the same code is asked about each step's action.
"""

from __future__ import annotations

import itertools
from typing import Any

from ..sandbox import SandboxLimits, run_function
from .script import Action, Script
from .world import WorldState

MAX_VALID_CALLS = 12
INVALID_VALUE = "not_a_valid_value"
LIMITS = SandboxLimits(wall_s=10, cpu_s=5, memory_mb=256)


def state_dict(state: WorldState) -> dict[str, Any]:
    return {"location": state.location, "inventory": list(state.inventory),
            "items_here": list(state.items_at.get(state.location, []))}  # fmt: skip


def _accepted(value: Any) -> bool:
    return value is True or (isinstance(value, list) and bool(value) and value[0] is True)


def _state_for(action: Action, params: dict[str, Any], start: str) -> dict[str, Any]:
    """A state in which every precondition of the action holds for these params."""
    location, inventory, here = start, [], []
    for rule in action.preconditions:
        if rule.kind == "player_at":
            location = rule.value
        elif rule.kind == "has_item":
            inventory.append(rule.value)
        elif rule.kind == "param_in_inventory":
            inventory.append(str(params[rule.value]))
        elif rule.kind == "param_at_location":
            here.append(str(params[rule.value]))
    return {"location": location, "inventory": inventory, "items_here": here}


def probe_calls(action: Action, start: str) -> list[tuple[list, bool, str]]:
    """(args, should_accept, what) cases for one action's validation code."""
    names = [p.name for p in action.parameters]
    combos = itertools.islice(itertools.product(*(p.valid_values for p in action.parameters)), MAX_VALID_CALLS)
    cases = []
    for values in combos:
        params = dict(zip(names, values))
        cases.append(([params, _state_for(action, params, start)], True, f"valid call {params}"))
    if cases:
        params, state = cases[0][0]
        for name in names:
            cases.append(([{**params, name: INVALID_VALUE}, state], False, f"invalid {name}={INVALID_VALUE}"))
        if action.preconditions:
            broken = {"location": "__nowhere__", "inventory": [], "items_here": []}
            cases.append(([params, broken], False, "a state that breaks its preconditions"))
    return cases


class SandboxCodeChecker:
    def script_problems(self, script: Script) -> list[str]:
        problems = []
        start = script.environment.player.location
        for action in script.actions:
            if action.validation_code:
                problems.extend(self._action_problems(action, start))
        return problems

    @staticmethod
    def _action_problems(action: Action, start: str) -> list[str]:
        cases = probe_calls(action, start)
        verdict = run_function(action.validation_code, "validate", [args for args, _, _ in cases], LIMITS)
        if verdict.status != "ok":  # rejected, timed out or killed as a whole: one problem, not one per call
            return [f"action '{action.name}': validation code {verdict.status}: {verdict.error or verdict.reason}"]
        problems = []
        for (_, should_accept, what), call in zip(cases, verdict.calls):
            if call.status != "ok":
                problems.append(f"action '{action.name}': validation code failed on {what}: {call.error}")
            elif _accepted(call.value) != should_accept:
                problems.append(f"action '{action.name}': validation code {'rejects' if should_accept else 'accepts'} {what}")
        return problems[:5]

    @staticmethod
    def step_check(script: Script):
        """An extra check for the verifier: ask the action's code about this call."""

        def check(name: str, params: dict[str, Any], state: WorldState):
            action = script.action(name)
            if action is None or not action.validation_code:
                return None
            verdict = run_function(action.validation_code, "validate", [[params, state_dict(state)]], LIMITS)
            call = verdict.calls[0] if verdict.calls else None
            if call is None or call.status != "ok":
                return False, f"validation code failed: {(call.error if call else verdict.error) or verdict.reason}"
            return (True, "") if _accepted(call.value) else (False, f"{name}: the validation code rejects this call")

        return check
