"""How good a run's verified refine trajectories are as training data (issue 13's quality report).

`refine_quality(store)` reads only the store: the verified refine rows, their turns and steps, and
the scripts they were played in. Counts over turns and scripts are SQL; whether the last action is
the one that completes the task needs the script's world, so those rows are replayed in Python.

- completion: per trajectory, `completed` when the goal first holds after the last action;
  `held_before_end` when it already held at the start or after an earlier action; `not_reached`
  when it does not hold at the end; `unknown` when the script declares no goal (only an LLM judged
  it) or the row cannot be replayed. The share counts every verified row, unknown ones included.
- mistakes: where the first one is (1-based assistant turn), their error types, how many per row,
  and whether the first assistant turn trains (the agent's first move from the opening observation).
- thoughts of mistaken turns (the text before `Action:`): how many repeat another row's mistaken
  thought word for word, and the most common opening words: an injection template shows as one
  prefix on most mistakes.
- diversity across environments: distinct task n-grams, action names and location names over the
  scripts of the verified rows.

`run_quality(run_dir)` is the same read from a run folder, through a read-only snapshot.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..store import Store
from .script import Script
from .world import WorldState, goal_reached, step

TASK_NGRAM = 3  # words per task n-gram in the diversity figure
PREFIX_WORDS = 5  # opening words of a thought compared across mistakes

# The verified refine rows' assistant turns, one row per turn, `pos` 1-based among assistant turns.
TURNS_SQL = r"""
WITH rows AS (
    SELECT trajectory_id, script_id, coalesce([x FOR x IN try(from_json(turns,
        '[{"role": "VARCHAR", "content": "VARCHAR", "loss": "BOOLEAN", "error": {"type": "VARCHAR"}}]'))
        IF x.role = 'assistant'], []) AS a
    FROM trajectories WHERE source = 'refine' AND verified AND turns IS NOT NULL),
unnested AS (SELECT trajectory_id, unnest(range(1, len(a) + 1)) AS pos, unnest(a) AS t FROM rows),
turn AS (
    SELECT trajectory_id, pos, coalesce(t.loss, false) AS loss, t.error.type AS error_type,
           trim(regexp_replace(split_part(t.content, 'Action:', 1), '^\s*Thought:', '')) AS thought,
           trim(split_part(split_part(t.content, 'Action:', 2), '(', 1)) AS action_name
    FROM unnested),
per_row AS (
    SELECT r.trajectory_id, count(t.pos) FILTER (t.error_type IS NOT NULL) AS mistakes,
           min(t.pos) FILTER (t.error_type IS NOT NULL) AS first_mistake,
           bool_or(t.loss) FILTER (t.pos = 1) AS first_trains,
           count(DISTINCT t.action_name) FILTER (t.action_name <> '') AS distinct_actions
    FROM rows r LEFT JOIN turn t USING (trajectory_id) GROUP BY r.trajectory_id),
mistaken AS (
    SELECT trajectory_id, thought,
           array_to_string(regexp_split_to_array(lower(thought), '\s+')[1:{prefix}], ' ') AS prefix
    FROM turn WHERE error_type IS NOT NULL)
""".replace("{prefix}", str(PREFIX_WORDS))

SCRIPT_SHAPE = (
    '{"task": "VARCHAR", "actions": [{"name": "VARCHAR"}], "environment": {"locations": [{"name": "VARCHAR"}]}}'
)
DIVERSITY_SQL = rf"""
WITH s AS (
    SELECT try(from_json(script, '{SCRIPT_SHAPE}')) AS j FROM scripts
    WHERE script_id IN (SELECT script_id FROM trajectories WHERE source = 'refine' AND verified)),
words AS (SELECT regexp_extract_all(lower(j.task), '[\pL\pN]+') AS w FROM s),
grams AS (SELECT unnest([array_to_string(w[i:i + {TASK_NGRAM - 1}], ' ')
                         FOR i IN range(1, len(w) - {TASK_NGRAM - 2})]) AS g FROM words),
actions AS (SELECT unnest(j.actions).name AS name FROM s),
places AS (SELECT unnest(j.environment.locations).name AS name FROM s)
SELECT (SELECT count(*) FROM s), (SELECT count(DISTINCT g) FROM grams), (SELECT count(g) FROM grams),
       (SELECT count(DISTINCT name) FROM actions), (SELECT count(name) FROM actions),
       (SELECT count(DISTINCT name) FROM places), (SELECT count(name) FROM places)
"""


def refine_quality(store: Store) -> dict[str, Any]:
    """Every figure of the quality report for the store's verified refine trajectories."""
    rows = _per_row(store)
    return {
        "verified": len(rows),
        "completion": _completion(store, len(rows)),
        "first_mistake": _counts([r[1] for r in rows if r[1] is not None]),
        "rows_without_mistake": sum(1 for r in rows if r[1] is None),
        "error_types": dict(
            _query(
                store,
                "SELECT error_type, count(*) FROM turn WHERE error_type IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1",
            )
        ),
        "mistakes_per_row": _counts([r[0] for r in rows]),
        "first_turn_trains": _share(sum(1 for r in rows if r[2]), len(rows)),
        "distinct_actions_per_row": _spread([r[3] for r in rows]),
        "thoughts": _thoughts(store),
        "diversity": _diversity(store),
    }


def _query(store: Store, select: str) -> list[tuple]:
    return store.query(TURNS_SQL + select)


def _per_row(store: Store) -> list[tuple]:
    return _query(store, "SELECT mistakes, first_mistake, first_trains, distinct_actions FROM per_row")


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _counts(values: list[int]) -> dict[int, int]:
    """Value -> how many rows have it, every value from the smallest to the largest (zeros kept)."""
    if not values:
        return {}
    return {v: values.count(v) for v in range(min(values), max(values) + 1)}


def _spread(values: list[int]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "min": None, "max": None}
    return {"mean": round(sum(values) / len(values), 2), "min": min(values), "max": max(values)}


def _thoughts(store: Store) -> dict[str, Any]:
    ((mistakes, repeated),) = _query(
        store,
        """
        , by_thought AS (SELECT thought, count(DISTINCT trajectory_id) AS rows FROM mistaken GROUP BY thought)
        SELECT count(*), count(*) FILTER (b.rows > 1) FROM mistaken m JOIN by_thought b USING (thought)""",
    )
    top = _query(store, "SELECT prefix, count(*) FROM mistaken GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1")
    prefix, turns = top[0] if top else (None, 0)
    return {"mistaken_turns": mistakes, "repeated": repeated, "share_repeated": _share(repeated, mistakes),
            "top_prefix": prefix, "top_prefix_turns": turns, "top_prefix_share": _share(turns, mistakes),
            "prefix_words": PREFIX_WORDS}  # fmt: skip


def _diversity(store: Store) -> dict[str, Any]:
    scripts, grams, all_grams, actions, all_actions, places, all_places = store.query(DIVERSITY_SQL)[0]
    return {
        "scripts": scripts,
        "task_ngrams": {"n": TASK_NGRAM, "distinct": grams, "total": all_grams, "share": _share(grams, all_grams)},
        "action_names": {"distinct": actions, "total": all_actions},
        "location_names": {"distinct": places, "total": all_places},
    }


# --- completion: replaying each verified row in its script's world ------------------------------------------

OUTCOMES = ("completed", "held_before_end", "not_reached", "unknown")
CALL = re.compile(r"^\s*([^()\s]+)\((.*)\)\s*$", re.S)


def goals_along(script: Script, actions: list[tuple[str, dict[str, Any], bool]]) -> list[bool | None]:
    """Whether the goal holds at the start and after each (name, params, accepted) action.

    The one place that drives the world, through its step function (check -> apply -> goal): an
    action the DM refused (e.g. by validation code, not run here) or the rules forbid leaves the
    state as it was, as the verifier replays it.
    """
    state = WorldState.initial(script)
    goals = [goal_reached(script, state)]
    for name, params, accepted in actions:
        moved = step(script, state, name, params) if accepted else None
        if moved is not None and moved.check.ok:
            state = moved.after
            goals.append(moved.done)
        else:
            goals.append(goals[-1])
    return goals


def outcome(goals: list[bool | None]) -> str:
    if len(goals) < 2 or goals[-1] is None:
        return "unknown"
    if not goals[-1]:
        return "not_reached"
    return "held_before_end" if any(goals[:-1]) else "completed"


def _completion(store: Store, verified: int) -> dict[str, Any]:
    counts = dict.fromkeys(OUTCOMES, 0)
    rows = store.query(
        "SELECT s.script, t.steps, t.turns FROM trajectories t LEFT JOIN scripts s USING (script_id) "
        "WHERE t.source = 'refine' AND t.verified AND t.turns IS NOT NULL"
    )
    for script_json, steps, turns in rows:
        counts[_replayed(script_json, steps, turns)] += 1
    known = verified - counts["unknown"]
    return {
        **counts,
        "share_completed": _share(counts["completed"], verified),
        "share_completed_of_known": _share(counts["completed"], known),
    }


def _replayed(script_json: str | None, steps: str | None, turns: str | None) -> str:
    try:
        script = Script.model_validate_json(script_json)
        actions = _step_actions(json.loads(steps)) if steps else _turn_actions(json.loads(turns))
    except (TypeError, ValueError, KeyError, IndexError, AttributeError):
        return "unknown"  # no script, or a row that cannot be read back: nothing to replay
    return outcome(goals_along(script, actions))


def _step_actions(steps: list[dict]) -> list[tuple[str, dict[str, Any], bool]]:
    """The verified steps as the pipeline stored them: structured actions and the DM's evaluation."""
    return [(s["action"]["name"], s["action"].get("params") or {}, s["evaluation"]["error"] == "none") for s in steps]


def _turn_actions(turns: list[dict]) -> list[tuple[str, dict[str, Any], bool]]:
    """Actions read back from the `Action: name(key=value, ...)` lines, for rows stored without steps."""
    actions = []
    for turn in turns:
        if turn["role"] != "assistant":
            continue
        match = CALL.match(turn["content"].split("Action:", 1)[1])
        if match is None:
            raise ValueError("unreadable action")
        pairs = [p.split("=", 1) for p in match.group(2).split(", ") if p]
        actions.append((match.group(1), {k.strip(): v.strip() for k, v in pairs}, turn.get("error") is None))
    return actions


# --- the text summary ----------------------------------------------------------------------------------------


def _pct(share: float | None) -> str:
    return "–" if share is None else f"{share:.1%}"


def _histogram_text(counts: dict[int, int]) -> str:
    return ", ".join(f"{value}: {n}" for value, n in counts.items()) or "none"


def format_quality(q: dict[str, Any]) -> str:
    """The quality figures as a few lines for the terminal (`factory quality`, end of `factory refine`)."""
    if not q["verified"]:
        return "refine quality: no verified refine trajectories"
    done, thoughts, div = q["completion"], q["thoughts"], q["diversity"]
    types = ", ".join(f"{t} {n}" for t, n in q["error_types"].items()) or "none"
    spread = q["distinct_actions_per_row"]
    grams = div["task_ngrams"]
    prefix = (
        (
            f'most common opening "{thoughts["top_prefix"]}" {thoughts["top_prefix_turns"]}/'
            f"{thoughts['mistaken_turns']} ({_pct(thoughts['top_prefix_share'])})"
        )
        if thoughts["top_prefix"]
        else ""
    )
    return "\n".join(
        [
            f"refine quality ({q['verified']} verified trajectories)",
            f"  last action completes the task: {done['completed']}/{q['verified']} ({_pct(done['share_completed'])}); "
            f"goal held before the end: {done['held_before_end']}, not reached: {done['not_reached']}, "
            f"unknown (no goal or not replayable): {done['unknown']}",
            f"  first mistake at assistant turn (turn: rows): {_histogram_text(q['first_mistake'])}; "
            f"rows without a mistake: {q['rows_without_mistake']}",
            f"  mistakes per row (mistakes: rows): {_histogram_text(q['mistakes_per_row'])}",
            f"  error types: {types}",
            f"  first assistant turn trains: {_pct(q['first_turn_trains'])} of rows",
            f"  distinct actions per row: mean {spread['mean']} (min {spread['min']}, max {spread['max']})",
            f"  mistaken thoughts repeating another row's: {thoughts['repeated']}/{thoughts['mistaken_turns']} "
            f"({_pct(thoughts['share_repeated'])}); {prefix}".rstrip("; "),
            f"  diversity over {div['scripts']} scripts: task {grams['n']}-grams {grams['distinct']}/{grams['total']} "
            f"distinct ({_pct(grams['share'])}), action names {div['action_names']['distinct']}/"
            f"{div['action_names']['total']}, location names {div['location_names']['distinct']}/"
            f"{div['location_names']['total']}",
        ]
    )


def run_quality(run_dir: str | Path) -> dict:
    """The quality figures of a run folder, read without writing to it (any schema version)."""
    with Store.open(run_dir, read_only=True) as store:
        return refine_quality(store)
