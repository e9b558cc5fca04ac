"""The `simulator` export: SFT rows that teach a model to play a refine world (the simulated environment).

AutoCoA's RL stage 1 rolls a policy out in a simulated environment: a model that plays the tools. The
factory's simulator (factory/envs/simulator.py) asks a model, for one move, the DM's verdict from the
script's rules and the moves so far. These rows train that model: one row per move of a kept refine
trajectory, `messages` = exactly what the simulator is asked for that move (`simulator_messages`: the
script's world and rules, the moves before it with the world's verdicts and the lines the player was told,
the move) + the reply it should give: the world's own verdict (`world.step` replayed, error type and goal)
and the line the player was really told, behind a DM check that states the state before the move and the
rule (simulator_truth.world_check). As in the `messages` format, `weight` is 1 on that last assistant
message, the only one, and null on the others, so only the reply trains (axolotl's
`message_field_training: weight`; `factory.mask.render` reads the same flag).

Refine rows only. A coa trajectory's observations come from the web and the sandbox, not from rules a
prompt could state; AutoCoA teaches those in the agent's own context (its SFT stage 3, the formats'
`--observations train`), so coa and import rows are left out here and counted. Moves refused by a script's
validation code are left out too: the simulator's prompt shows the declarative rules, not the code.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any, Iterator

import pyarrow as pa
import yaml
from pydantic import ValidationError

from ..envs.simulator import simulator_messages
from ..envs.simulator_truth import history_before, judge_steps, world_reply
from ..refine.script import Script
from ..store import Store
from .openai_format import METADATA_TYPES, native_sql
from .options import ExportOptions, FormatName
from .snippets import axolotl_dataset
from .stream import write_stream

if TYPE_CHECKING:
    from .consumers import SplitWriter
    from .dataset import FormatFiles

MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string()), ("weight", pa.int8())])
SCHEMA = pa.schema([("id", pa.string()), ("messages", pa.list_(MESSAGE)), *METADATA_TYPES.items()])
NOT_REFINE = "coa/import trajectories: no script to simulate (their observations train with --observations train)"
UNREADABLE_STEPS = "refine trajectories whose stored steps do not read as moves"
CODE_REFUSED = "move(s) refused by validation code, which the simulator's prompt does not show"


def simulator_writer(
    store: Store, name: FormatName, selection: str, options: ExportOptions, settings: dict
) -> SplitWriter:
    skipped: Counter = settings.setdefault("skipped", Counter())
    return lambda split, folder: write_stream(
        simulator_rows(store, selection, split, skipped), split, folder, options, SCHEMA
    )


def simulator_rows(store: Store, selection: str, split: str, skipped: Counter) -> Iterator[dict[str, Any]]:
    """The split's simulator rows, a trajectory at a time; what cannot be written is counted in `skipped`."""
    query = f"SELECT * EXCLUDE (split) FROM ({native_sql(selection)}) WHERE split = '{split}'"
    for batch in store.arrow_batches(query):
        for row in batch.to_pylist():
            yield from trajectory_rows(row, skipped)


def trajectory_rows(row: dict[str, Any], skipped: Counter) -> Iterator[dict[str, Any]]:
    """One row per move of a refine trajectory: the simulator's prompt for it, then the world's reply."""
    if row["source"] != "refine":
        skipped[NOT_REFINE] += 1
        return
    script = _script(row, skipped)
    if script is None:
        return
    try:
        judged = judge_steps(script, json.loads(row["steps"]))
    except (ValueError, KeyError, TypeError, AttributeError):  # a hand-edited or damaged row: counted, not raised
        skipped[UNREADABLE_STEPS] += 1
        return
    metadata = {key: row[key] for key in METADATA_TYPES}
    for index, step in enumerate(judged):
        if step.code_refused:
            skipped[CODE_REFUSED] += 1
            continue
        asked = simulator_messages(script, history_before(judged, index), step.action)
        messages = [{**message, "weight": None} for message in asked]
        messages.append({"role": "assistant", "content": world_reply(step), "weight": 1})
        yield {"id": f"{row['trajectory_id']}:{index}", "messages": messages, **metadata}


def _script(row: dict[str, Any], skipped: Counter) -> Script | None:
    if not row.get("steps") or not row.get("script"):
        skipped["refine trajectories without their stored steps or script"] += 1
        return None
    try:
        return Script.model_validate_json(row["script"])
    except ValidationError:
        skipped["refine trajectories whose stored script does not parse"] += 1
        return None


def simulator_snippet(fmt: FormatFiles, path: str, repo_id: str | None, file_type: str) -> str:
    """The card's text: what a row is, and the axolotl entry that trains only the reply."""
    dataset = axolotl_dataset(repo_id, fmt.name) if repo_id else axolotl_dataset(path)
    entry = yaml.safe_dump({"chat_template": "tokenizer_default", "datasets": [dataset]}, sort_keys=False).strip()
    return (
        "**World simulator** (`simulator`: one row per move of a refine trajectory, the prompt the factory's "
        "simulated environment sends for it and the real world's reply; only that last assistant message "
        "trains, `weight` 1; for AutoCoA's RL stage 1, a model that plays the environment, "
        f"factory/envs/simulator.py). axolotl:\n\n```yaml\n{entry}\n```"
    )
