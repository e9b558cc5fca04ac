"""Slips: the mistakes agents really make, one taxonomy for the injector to draw from and the figures to count.

A refused move is a slip of one kind, judged by the script's world against the states the row went
through (`classify`):

- `wrong_value`: a value of the right kind that this action does not take (another place, another
  item that shares a word with a right one or lies beside one);
- `wrong_amount`: a number outside the ones the action takes;
- `wrong_place`: an action tried where it cannot be done, or on an item that is elsewhere;
- `missing_item`: an action that needs something the player is not carrying;
- `skipped_step`: an action whose prerequisite (a fact) does not hold yet;
- `premature_finish`: the task's finishing action before its prerequisites hold;
- `stale_belief`: a move that worked, or would have, earlier in the row where the player stands now,
  and no longer does (an item already taken, a thing already done): the player acts on how the
  world was.

Moves the world accepts but an LLM DM refused (`judged_by_dm`), validation code refusals
(`refused_by_code`) and unknown actions are counted apart; none of them is injected.

An injected slip must be one a careful player could make at that point (`consistent`): the move is
refused in the state before the last step as well, so the last observation did not just tell the
player the very thing the move ignores (taking what it just picked up, acting in the room it just
left, redoing what it was just told is done); a wrong value or amount goes on a move that a right
value would make work here (not on an action already done or out of place).

The kind to inject is drawn by `SlipMix`: the config's target mix, moved by the LLM-made slips the run
store already holds (`learned_counts`, by kind and by phase of the row: the opening move, the middle,
the step before the finishing one) toward the kinds the model does not make on its own and toward the
phase where it makes each, and away from kinds the row already holds.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any

from ..store import Store
from .config import SLIPS, RefineConfig
from .script import Action, Parameter, Script
from .solvable import shortest_plan
from .values import valid_typed
from .world import ActionCheck, WorldState, check_action
from .world import step as world_step

NOT_INJECTED = ("judged_by_dm", "refused_by_code", "unknown_action")
VALUE_SLIPS = ("wrong_value", "wrong_amount")
PHASES = ("opening", "middle", "closing")
BY_FAILED_RULE = {"player_at": "wrong_place", "param_at_location": "wrong_place", "has_item": "missing_item",
                  "param_in_inventory": "missing_item", "already_held": "stale_belief", "fact_false": "stale_belief",
                  "code": "refused_by_code", "unknown_action": "unknown_action"}  # fmt: skip
PRIOR_ROWS = 20  # LLM-made slips that weigh as much as the even prior; past it the store's counts lead
MAX_LEARNED = 0.5  # the counts never move a weight by more than half: every kind stays in the data
ROW_REPEAT = 0.2  # a kind the row already holds weighs this much
MAX_CALLS_PER_ACTION = 64


# --- what a refused move is -----------------------------------------------------------------------------------


def replay_states(script: Script, steps: list[dict]) -> list[WorldState]:
    """The state before each step and after the last: accepted moves applied, refused ones not."""
    states = [WorldState.initial(script)]
    for done in steps:
        action = done["action"]
        moved = world_step(script, states[-1], action["name"], action["params"])
        accepted = done["evaluation"]["error"] == "none" and moved.check.ok
        states.append(moved.after if accepted else states[-1])
    return states


def finishing_actions(script: Script) -> set[str]:
    """Actions that make a goal condition hold: the task's last move (and the shortest plan's last one)."""
    goal = {(c.kind, c.value) for c in script.goal.conditions}
    makes = {"set_fact": "fact_true", "clear_fact": "fact_false"}
    names = {a.name for a in script.actions for e in a.effects if (makes.get(e.kind), e.value) in goal}
    plan = shortest_plan(script)
    return names | ({plan[-1][0]} if plan else set())


def _wrong_parameter(action: Action, params: dict[str, Any]) -> Parameter | None:
    valid = {p.name: set(map(str, p.valid_values)) for p in action.parameters}
    return next((p for p in action.parameters if str(params.get(p.name)) not in valid[p.name]), None)


def classify(script: Script, history: list[WorldState], name: str, params: dict[str, Any],
             check: ActionCheck | None = None, finishing: set[str] | None = None) -> str:  # fmt: skip
    """The slip a move is, in the state `history[-1]` after the row's earlier states `history[:-1]`."""
    check = check or check_action(script, history[-1], name, params)
    if check.ok:
        return "judged_by_dm"
    if check.failed == "parameter":
        wrong = _wrong_parameter(script.action(name), params)
        return "wrong_amount" if wrong is not None and wrong.type in ("integer", "number") else "wrong_value"
    if check.failed in ("code", "unknown_action"):
        return BY_FAILED_RULE[check.failed]
    here = history[-1].location  # where the player stands is no belief: the world's things and facts are
    if any(s.location == here and check_action(script, s, name, params).ok for s in history[:-1]):
        return "stale_belief"
    if check.failed == "fact_true":
        return "premature_finish" if name in (finishing or finishing_actions(script)) else "skipped_step"
    return BY_FAILED_RULE.get(check.failed, "skipped_step")


def consistent(script: Script, history: list[WorldState], name: str, params: dict[str, Any]) -> bool:
    """Refused before the last step too: the last observation did not just say what this move ignores."""
    return len(history) < 2 or not check_action(script, history[-2], name, params).ok


def phase(steps: list[dict], position: int) -> str:
    """Where a mistake at `position` sits: the opening move, before the finishing step, or between."""
    if position == 0:
        return "opening"
    following = next((s for s in steps[position:] if s["evaluation"]["error"] == "none"), None)
    return "closing" if following is not None and following["evaluation"]["task_done"] else "middle"


def label_slips(script: Script, steps: list[dict]) -> list[dict]:
    """The steps with every mistake's slip kind and phase (`slip`, `phase`); an injected step keeps its own."""
    states, finishing = replay_states(script, steps), finishing_actions(script)
    labelled = []
    for index, done in enumerate(steps):
        if done["evaluation"]["error"] == "none":
            labelled.append(done)
            continue
        action = done["action"]
        slip = done.get("slip") or classify(
            script, states[: index + 1], action["name"], action["params"], finishing=finishing
        )
        labelled.append({**done, "slip": slip, "phase": phase(steps, index)})
    return labelled


# --- the mistakes a player could make here --------------------------------------------------------------------


def confusions(script: Script, target: Parameter) -> list[Any]:
    """Values a player could take for a right one: a number near the valid ones; another place for a
    place; another item that shares a word with a right one or lies beside one. None for a parameter with
    one valid value (the action list shows there is no choice) or values that are neither."""
    valid = valid_typed(target)
    if len(valid) < 2 or target.type == "boolean":
        return []
    if target.type in ("integer", "number"):
        return _near_numbers(sorted(v for v in valid if isinstance(v, (int, float))), target.type)
    places = {loc.name for loc in script.environment.locations}
    if set(valid) & places:
        return sorted(places - set(valid))
    return sorted(_items_like(script, set(map(str, valid))))


def _near_numbers(numbers: list[int | float], kind: str) -> list[int | float]:
    """Amounts a player could misremember: the series carried on past either end, or halfway between two."""
    step = min(b - a for a, b in zip(numbers, numbers[1:]))
    near = {numbers[-1] + step, numbers[-1] + 2 * step, numbers[0] - step}
    near |= {(a + b) / 2 for a, b in zip(numbers, numbers[1:])}
    if kind == "integer":
        near = {int(n) for n in near if n == int(n)}
    return sorted(n for n in near - set(numbers) if n > 0)


def _items_like(script: Script, valid: set[str]) -> set[str]:
    words = {w for v in valid for w in v.split("_") if len(w) > 2}
    beside = [set(loc.items) for loc in script.environment.locations if set(loc.items) & valid]
    items = {i for loc in script.environment.locations for i in loc.items} | set(script.environment.player.inventory)
    if not valid & items:
        return set()
    similar = {i for i in items if words & set(i.split("_"))}
    return (similar | set().union(*beside)) - valid


def possible_moves(script: Script) -> list[tuple[str, dict[str, Any]]]:
    """Every call with valid typed values (bounded per action), and each with one value confused."""
    calls = []
    for action in script.actions:
        values = [valid_typed(p) for p in action.parameters]
        combos = list(itertools.islice(itertools.product(*values), MAX_CALLS_PER_ACTION))
        calls += [(action.name, {p.name: v for p, v in zip(action.parameters, combo)}) for combo in combos]
        for target in action.parameters:
            for wrong in confusions(script, target):
                base = dict(zip((p.name for p in action.parameters), combos[0]))
                calls.append((action.name, {**base, target.name: wrong}))
    return calls


def slips_here(
    script: Script, history: list[WorldState], used: set[str], finishing: set[str]
) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """The injectable moves in `history[-1]` by slip kind: refused, consistent with the last
    observation, and none a move the row already holds (`used`, as `move_key` writes them)."""
    found: dict[str, list] = {}
    for name, params in possible_moves(script):
        if move_key(name, params) in used:
            continue
        check = check_action(script, history[-1], name, params)
        if check.ok or not consistent(script, history, name, params):
            continue
        kind = classify(script, history, name, params, check, finishing)
        if kind in SLIPS and (kind not in VALUE_SLIPS or _right_but_for_value(script, history[-1], name, params)):
            found.setdefault(kind, []).append((name, params))
    return found


def _right_but_for_value(script: Script, state: WorldState, name: str, params: dict[str, Any]) -> bool:
    """The move would work, and change something, with a right value in place of the wrong one: the player
    does a useful thing with a wrong value, not something pointless here that happens to carry one."""
    wrong = _wrong_parameter(script.action(name), params)
    if wrong is None:
        return False
    for value in valid_typed(wrong):
        moved = world_step(script, state, name, {**params, wrong.name: value})
        if moved.check.ok and moved.after.key() != state.key():
            return True
    return False


def move_key(name: str, params: dict[str, Any]) -> str:
    return f"{name}:{sorted((k, str(v)) for k, v in params.items())}"


# --- which kind to inject -------------------------------------------------------------------------------------


def learned_counts(store: Store) -> dict[str, dict[str, int]]:
    """LLM-made slips the store's refine rows hold, by phase and kind (injected ones left out)."""
    rows = store.query(
        """SELECT s.phase, s.slip, count(*) FROM (
               SELECT unnest(try(from_json(steps, '[{"slip": "VARCHAR", "phase": "VARCHAR", "injected": "VARCHAR"}]')))
               AS s FROM trajectories WHERE source = 'refine' AND steps IS NOT NULL)
           WHERE s.slip IS NOT NULL AND s.injected IS NULL GROUP BY 1, 2"""
    )
    counts: dict[str, dict[str, int]] = {}
    for where, slip, n in rows:
        if where in PHASES and slip in SLIPS:
            counts.setdefault(where, {})[slip] = n
    return counts


def weighted_order(weights: dict[str, float], rng: random.Random) -> list[str]:
    """The keys in a random order where heavier ones tend to come first; zero weights left out."""
    keyed = [(rng.random() ** (1.0 / w), k) for k, w in weights.items() if w > 0]
    return [k for _, k in sorted(keyed, reverse=True)]


@dataclass
class SlipMix:
    """The weights an injected slip is drawn with. The target is the config's `slip_mix`; the LLM-made
    slips the store held when the batch began show what the model already makes on its own, and where:
    a kind it makes at or past its target share weighs less (injection fills what the model lacks), and
    a kind weighs more in the phase where the model makes it. How far the counts move the weights grows
    with how many there are (at most MAX_LEARNED); with none, the target alone. A kind the row already
    holds (the LLM's own or injected) weighs ROW_REPEAT as much, so a row's slips differ."""

    mix: dict[str, float] = field(default_factory=lambda: dict.fromkeys(SLIPS, 1.0))
    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: RefineConfig) -> "SlipMix":
        return cls(dict(settings.slip_mix), settings.slip_counts)

    def learned(self) -> float:
        """How far the counts move the weights: more with more LLM-made slips seen, at most MAX_LEARNED."""
        total = sum(n for by_kind in self.counts.values() for n in by_kind.values())
        return min(MAX_LEARNED, total / (total + PRIOR_ROWS))

    def fit(self, where: str, kind: str) -> float:
        """How well a phase suits a kind: 1 where the model makes it most (or anywhere, with no counts)."""
        most = max(self.counts.get(p, {}).get(kind, 0) for p in PHASES)
        learned = self.learned()
        return 1.0 if not most else (1 - learned) + learned * self.counts.get(where, {}).get(kind, 0) / most

    def weights(self, where: str | None, row_kinds: set[str] = frozenset()) -> dict[str, float]:
        """Each kind's weight in `where` (None: any phase) for a row already holding `row_kinds`."""
        made = {k: sum(self.counts.get(p, {}).get(k, 0) for p in PHASES) for k in self.mix}
        total, wanted, learned = sum(made.values()), sum(self.mix.values()) or 1.0, self.learned()
        out = {}
        for kind, user in self.mix.items():
            target = user / wanted
            surplus = min(1.0, made[kind] / total / target) if total and target else 0.0
            weight = target * (1 - learned * surplus) * (self.fit(where, kind) if where else 1.0)
            out[kind] = weight * (ROW_REPEAT if kind in row_kinds else 1.0)
        return out

    def draw(self, found: dict[str, list], where: str | None, row_kinds: set[str], rng: random.Random) -> str | None:
        """A kind among those possible here, by weight; None when none of the mix is possible."""
        weights = {k: w for k, w in self.weights(where, row_kinds).items() if k in found and w > 0}
        if not weights:
            return None
        return weighted_order(dict(sorted(weights.items())), rng)[0]
