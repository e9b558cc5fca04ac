"""The RL hand-off of the refine path: the refine worlds of the RL split as environments for verl.

A refine trajectory has no query and no reference answer, so it cannot be an RL query (verl.py); its
script can be an environment. For every script with a kept trajectory in the RL split (and none in
another split: no world is in both), the export writes OUT/verl/refine_world/:

- `<split>-00000-of-00001.parquet`: one verl row per world (factory/envs/episodes.py): `agent_name`
  refine_world, the text game's opening prompt, and the script in `extra_info`, for the agent loop
  factory/envs/verl_agent.py, which plays the world and rewards the world's goal verdict;
- `scripts.jsonl`: the worlds' scripts as {script_id, script, verified} (what `RefineWorldEnv(scripts=
  load_scripts(...))` and `factory eval --scripts` read);
- `agent_loop.yaml`: the agent loop's registry entry, for `actor_rollout_ref.rollout.agent.agent_loop_config_path`.

A world the world cannot score (no declared goal, no short plan, the goal holding at the start:
envs/scripts.py `playable`) is counted in a note and left out. Row contract: docs/rl_handoff.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from ..envs.episodes import AGENT_NAME, episode_row
from ..envs.scripts import playable
from ..refine.script import Script
from ..store import Store
from .options import ExportError, ExportOptions
from .selection import selection_sql

FOLDER = "refine_world"
AGENT_LOOP = "factory.envs.verl_agent.RefineWorldAgentLoop"


def rl_worlds_sql(options: ExportOptions, split: str) -> str:
    """Per script with a taskless trajectory in the RL split: those trajectories, and whether another split has one."""
    selection = selection_sql(options.model_copy(update={"upsample": "none"}))  # one row per trajectory
    return f"""
        SELECT script_id, list(trajectory_id ORDER BY trajectory_id) FILTER (WHERE split = '{split}') AS ids,
               bool_or(split <> '{split}') AS in_sft
        FROM ({selection}) WHERE task_id IS NULL AND script_id IS NOT NULL
        GROUP BY script_id HAVING bool_or(split = '{split}') ORDER BY script_id"""


def unplayable_trajectories(store: Store, options: ExportOptions, split: str) -> int:
    """Kept trajectories of the RL split with neither a task nor a script: nothing to roll out in."""
    selection = selection_sql(options.model_copy(update={"upsample": "none"}))
    sql = f"SELECT count(*) FROM ({selection}) WHERE split = '{split}' AND task_id IS NULL AND script_id IS NULL"
    return store.query(sql)[0][0]


def world_rows(store: Store, options: ExportOptions, split: str, notes: list[str]) -> tuple[list[dict], list[dict]]:
    """(the verl rows, the scripts file's rows) of the RL split's refine worlds; what is left out goes to `notes`."""
    # Split names were checked against SPLIT_NAME (\w+ words), so quoting them inline is safe.
    worlds = store.query(rl_worlds_sql(options, split))
    kept = [(script_id, ids) for script_id, ids, in_sft in worlds if not in_sft]
    if len(kept) < len(worlds):
        notes.append(f"{len(worlds) - len(kept)} refine world(s) also in an SFT split: left out of the RL rows")
    wanted = [script_id for script_id, _ in kept]
    bodies = dict(store.query("SELECT script_id, script FROM scripts WHERE list_contains(?, script_id)", [wanted]))
    rows, scripts, unusable = [], [], []
    for script_id, ids in kept:
        script, why = _playable_script(bodies.get(script_id))
        if script is None:
            unusable.append(f"{script_id}: {why}")
            continue
        rows.append(episode_row(script_id, script, split, ids, playable(script)[0]))
        scripts.append({"script_id": script_id, "script": script.model_dump(mode="json"), "verified": True})
    if unusable:
        notes.append(f"{len(unusable)} refine world(s) the world cannot score, left out (e.g. {unusable[0]})")
    if lost := unplayable_trajectories(store, options, split):
        notes.append(f"{lost} trajectories with neither a task nor a script: no RL row for them")
    return rows, scripts


def _playable_script(body: str | None) -> tuple[Script | None, str]:
    if body is None:
        return None, "its script is not in the store"
    try:
        script = Script.model_validate_json(body)
    except ValidationError as exc:
        return None, f"its script does not parse ({str(exc).splitlines()[0]})"
    length, why = playable(script)
    return (script, "") if length is not None else (None, why)


def write_worlds(
    store: Store, options: ExportOptions, split: str, staging: Path, notes: list[str]
) -> tuple[int, list[Path]]:
    """Write staging/refine_world/ (rows, scripts.jsonl, agent_loop.yaml); (rows written, files relative to staging)."""
    rows, scripts = world_rows(store, options, split, notes)
    if not rows:
        return 0, []
    folder = staging / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"{split}-00000-of-00001.{'parquet' if options.file_type == 'parquet' else 'jsonl'}"
    if options.file_type == "parquet":
        try:
            pq.write_table(pa.Table.from_pylist(rows), data, compression="zstd")
        except (pa.ArrowException, TypeError) as exc:
            raise ExportError(f"refine-world RL rows: {str(exc).splitlines()[0]}") from None
    else:
        data.write_text(_jsonl(rows), "utf-8")
    (folder / "scripts.jsonl").write_text(_jsonl(scripts), "utf-8")
    (folder / "agent_loop.yaml").write_text(f"- name: {AGENT_NAME}\n  _target_: {AGENT_LOOP}\n", "utf-8")
    notes.append(
        f"{len(rows)} refine world(s) in {FOLDER}/: an RL run of their own with the {AGENT_NAME} agent loop "
        f"(agent_loop_config_path={FOLDER}/agent_loop.yaml; docs/environments.md)"
    )
    return len(rows), [
        path.relative_to(staging) for path in (data, folder / "scripts.jsonl", folder / "agent_loop.yaml")
    ]


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
