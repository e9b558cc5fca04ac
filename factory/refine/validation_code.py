"""Validation code, checked and used only through the sandbox (DESIGN rule 4).

A script's action may carry `def validate(params, state)` returning True/False
(or [bool, message]: the message is what the DM tells the player). `params`
holds the call's values in their parameters' declared types (values.py: the
number 15 for an integer parameter, never "15"); `state` is a dict with
"location", "inventory", "items_here" and "facts" (every declared fact's name
-> true/false). Script verification calls it in the sandbox on valid calls (it
must accept) and on invalid ones (a well-typed value outside the valid list, a
state that breaks a precondition: it must reject). During trajectory
verification `world.step` asks the same code about each rule-valid call, with
values typed the same way.
"""

from __future__ import annotations

import itertools
from typing import Any

from ..errors import FactoryError
from ..sandbox import SandboxLimits, run_function, sandbox_refusal
from .narration import refusal
from .script import Action, Script
from .values import invalid_value, valid_typed, values_problems
from .world import WorldState

MAX_VALID_CALLS = 12
LIMITS = SandboxLimits(wall_s=10, cpu_s=5, memory_mb=256)


def state_dict(script: Script, state: WorldState) -> dict[str, Any]:
    facts = {name: name in state.facts for name in script.fact_names()}
    return {"location": state.location, "inventory": list(state.inventory), "items_here": state.items_here(),
            "facts": facts}  # fmt: skip


def _accepted(value: Any) -> bool:
    return value is True or (isinstance(value, list) and bool(value) and value[0] is True)


def _refusal_text(value: Any) -> str:
    """The code's own message when it gave one ([False, "..."]), else the DM's plain refusal."""
    if isinstance(value, list) and len(value) > 1 and isinstance(value[1], str) and value[1].strip():
        return value[1].strip()[:200]
    return refusal("code")


def _state_for(action: Action, params: dict[str, Any], start: str, facts: dict[str, bool]) -> dict[str, Any]:
    """A state in which every precondition of the action holds for these params."""
    location, inventory, here, facts = start, [], [], dict(facts)
    for rule in action.preconditions:
        if rule.kind == "player_at":
            location = rule.value
        elif rule.kind == "has_item":
            inventory.append(rule.value)
        elif rule.kind == "param_in_inventory":
            inventory.append(str(params[rule.value]))
        elif rule.kind == "param_at_location":
            here.append(str(params[rule.value]))
        elif rule.kind in ("fact_true", "fact_false"):
            facts[rule.value] = rule.kind == "fact_true"
    return {"location": location, "inventory": inventory, "items_here": here, "facts": facts}


def _broken(action: Action, facts: dict[str, bool]) -> dict[str, Any]:
    """A state in which every precondition of the action fails."""
    flipped = {**facts, **{r.value: r.kind == "fact_false" for r in action.preconditions if r.kind.startswith("fact_")}}
    return {"location": "__nowhere__", "inventory": [], "items_here": [], "facts": flipped}


def probe_calls(action: Action, start: str, facts: dict[str, bool] | None = None) -> list[tuple[list, bool, str]]:
    """(args, should_accept, what) cases for one action's validation code, values typed."""
    facts = facts or {}
    names = [p.name for p in action.parameters]
    combos = itertools.islice(itertools.product(*(valid_typed(p) for p in action.parameters)), MAX_VALID_CALLS)
    cases = []
    for values in combos:
        params = dict(zip(names, values))
        cases.append(([params, _state_for(action, params, start, facts)], True, f"valid call {params}"))
    if cases:
        params, state = cases[0][0]
        for param in action.parameters:
            wrong = invalid_value(param)
            if wrong is not None:
                cases.append(([{**params, param.name: wrong}, state], False, f"invalid {param.name}={wrong!r}"))
        if action.preconditions:
            cases.append(([params, _broken(action, facts)], False, "a state that breaks its preconditions"))
    return cases


class SandboxCodeChecker:
    def __init__(self) -> None:
        # Where generated code may not run (no Landlock/seccomp), every validation function would come back
        # "not run" and read as a flaw of the script: stop the run up front instead, naming the missing layer.
        refused = sandbox_refusal()
        if refused:
            raise FactoryError(f"refine: validation code cannot run here: {refused}; run with --no-code")

    def script_problems(self, script: Script) -> list[str]:
        problems = []
        start = script.environment.player.location
        true_at_start = {f.name for f in script.environment.facts if f.initially}
        facts = {name: name in true_at_start for name in script.fact_names()}
        for action in script.actions:
            # Mistyped valid values are reported by solvable.solvability_problems, once.
            if action.validation_code and not values_problems(action):
                problems.extend(self._action_problems(action, start, facts))
        return problems

    @staticmethod
    def _action_problems(action: Action, start: str, facts: dict[str, bool]) -> list[str]:
        cases = probe_calls(action, start, facts)
        verdict = run_function(action.validation_code, "validate", [args for args, _, _ in cases], LIMITS)
        if verdict.status != "ok":  # rejected, timed out or killed as a whole: one problem, not one per call
            return [f"action '{action.name}': validation code {verdict.status}: {verdict.error or verdict.reason}"]
        problems = []
        for (_, should_accept, what), call in zip(cases, verdict.calls):
            if call.status != "ok":
                problems.append(f"action '{action.name}': validation code failed on {what}: {call.error}")
            elif _accepted(call.value) != should_accept:
                problems.append(
                    f"action '{action.name}': validation code {'rejects' if should_accept else 'accepts'} {what}"
                )
        return problems[:5]

    @staticmethod
    def step_check(script: Script):
        """An extra check for `world.step`: ask the action's code about this call (typed values)."""

        def check(name: str, params: dict[str, Any], state: WorldState):
            action = script.action(name)
            if action is None or not action.validation_code:
                return None
            verdict = run_function(action.validation_code, "validate", [[params, state_dict(script, state)]], LIMITS)
            call = verdict.calls[0] if verdict.calls else None
            if call is None or call.status != "ok":
                return False, f"validation code failed: {(call.error if call else verdict.error) or verdict.reason}"
            return (True, "") if _accepted(call.value) else (False, _refusal_text(call.value))

        return check
