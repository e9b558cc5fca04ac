"""The RL hand-off: the queries of the RL split as verl rows, one per query.

AFM trains RL on the queries its policy still finds hard and that are not in
its SFT set, fed to verl as rows of `data_source`, `prompt` (chat messages),
`ability`, `reward_model` ({style, ground_truth}) and `extra_info` - the layout
of the task files in data/tasks. A trajectory is no use to an RL trainer: it
needs the query, the prompt the policy sees and the reference its reward
function reads. So the RL split is written here, as OUT/verl/<run>/<split>-*.parquet
with one folder per RL run (web_agent: qa rows; code_agent: math and code rows; rows of
two reward or tool layouts cannot share a run), and its trajectories stay out of the SFT
formats (factory/export/dataset.py). The RL split's refine trajectories have no query: their
scripts go to verl/refine_world/ as environments for an agent loop (verl_envs.py).

Which queries (SQL over the store, like the other formats): the tasks with a
kept trajectory in the RL split and none in any other split; a task in both is
left out and counted. The store keeps a task's id and question, not its
reference answer, so the rows are completed from the task file(s): named in
RLOptions.tasks, else those the run's own configs recorded (coa.tasks,
passrate.tasks, a pass_rate filter's tasks). Row contract: docs/rl_handoff.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field

from ..coa.tools.registry import rl_tools
from ..config import StrictModel
from ..passrate.prompting import Policy
from ..passrate.rates import rates_sql
from ..store import Store
from ..tasks import RowProblem, Task, TaskError, open_rows, row_to_task
from ..tasks.recorded import recorded_task_files
from .options import ExportError, ExportOptions
from .selection import selection_sql
from .verl_envs import write_worlds
from .writers import fresh_folder, replace_folder

FOLDER = "verl"
# A layout's folder: AFM trains each agent in its own RL run, with one tool config and one reward manager
# (AFM/train/web_agent/rl: web tools, batch + grm_simple; code_agent/rl: the code tool, afm).
AGENTS = {("target", ("crawl_page", "web_search")): "web_agent", ("text", ("code",)): "code_agent"}


class RLOptions(StrictModel):
    split: str = Field("rl", pattern=r"^\w+(\.\w+)*$")  # the split a split filter sends RL queries to
    tasks: list[str] = Field(default_factory=list)  # task files; empty: the ones the run's configs name
    pass_rate_model: str | None = None  # rollouts label for extra_info.pass_rate; default: the run's policy


@dataclass
class Query:
    """One RL query as the store knows it."""

    task_id: str
    trajectory_ids: list[str]
    instruction: str | None  # the AFM instruction our AFM rows carry for this task
    rollouts: int | None
    pass_rate: float | None


@dataclass
class RLFiles:
    folder: Path  # relative to the output folder, e.g. verl or data/verl
    files: list[Path] = field(default_factory=list)  # relative to the output folder
    rows: int = 0
    trajectories: int = 0  # kept trajectories of the RL split (none of them is in an SFT format)
    notes: list[str] = field(default_factory=list)


def rl_queries_sql(options: ExportOptions, split: str) -> str:
    """Per task of the RL split: its RL trajectories, its stored instruction, and whether another split has it."""
    selection = selection_sql(options.model_copy(update={"upsample": "none"}))  # one row per trajectory
    return f"""
        SELECT task_id, list(trajectory_id ORDER BY trajectory_id) FILTER (WHERE split = '{split}') AS ids,
               arg_min(prompt, trajectory_id) FILTER (WHERE split = '{split}' AND prompt IS NOT NULL) AS instruction,
               bool_or(split <> '{split}') AS in_sft
        FROM ({selection}) WHERE task_id IS NOT NULL
        GROUP BY task_id HAVING bool_or(split = '{split}')"""


def read_queries(store: Store, options: ExportOptions, split: str, model: str | None) -> tuple[list[Query], int]:
    """(the RL queries no other split holds, with their pass rates; how many were left out for being in both)."""
    # Split names were checked against SPLIT_NAME (\w+ words), so quoting them inline is safe.
    queries = rl_queries_sql(options, split)
    if model is None:
        rows = store.query(f"SELECT task_id, ids, instruction, in_sft, NULL, NULL FROM ({queries}) ORDER BY 1")
    else:
        rows = store.query(
            f"""
            SELECT q.task_id, q.ids, q.instruction, q.in_sft, r.n, r.pass_rate
            FROM ({queries}) q LEFT JOIN ({rates_sql(None)}) r USING (task_id) ORDER BY 1""",
            [model],
        )
    kept = [Query(task, ids, text, n, rate) for task, ids, text, in_sft, n, rate in rows if not in_sft]
    return kept, len(rows) - len(kept)


def taskless_trajectories(store: Store, options: ExportOptions, split: str) -> tuple[int, int]:
    """(kept trajectories of the RL split, those of them with no task: refine rows, RL environments in verl_envs.py)."""
    selection = selection_sql(options.model_copy(update={"upsample": "none"}))
    return store.query(
        f"SELECT count(*), count(*) FILTER (WHERE task_id IS NULL) FROM ({selection}) WHERE split = '{split}'"
    )[0]


def policy_model(store: Store) -> str | None:
    """The rollouts label of the run's policy: its pass_rate filter's, else the only one the rollouts hold."""
    labels = store.query("""
        SELECT DISTINCT coalesce(json_extract_string(params, '$.model'), json_extract_string(params, '$.policy.model'))
        FROM filter_configs WHERE kind = 'pass_rate'""")
    if len(labels) != 1:
        labels = store.query("SELECT DISTINCT model FROM rollouts")
    return labels[0][0] if len(labels) == 1 else None


def read_task_rows(paths: list[str], wanted: set[str]) -> dict[str, tuple[Task, dict[str, Any]]]:
    """The wanted tasks, each with the row it was read from (the first file that has it wins)."""
    found: dict[str, tuple[Task, dict[str, Any]]] = {}
    for path in paths:
        try:
            label, rows = open_rows(path, "train")
            for place, row in rows:
                try:
                    task = row_to_task(row, place, label, None)
                except RowProblem:  # a row the coa path skipped too: it cannot be one of ours
                    continue
                if task.id in wanted and task.id not in found:
                    found[task.id] = (task, row)
        except TaskError as exc:
            raise ExportError(f"RL rows: {exc}") from None
    return found


def policy_prompt(task: Task, instruction: str | None) -> list[dict[str, str]]:
    """The chat messages the policy sees: the task file's own prompt (what AFM's RL data and the
    pass-rate rollouts send), else the AFM instruction our AFM rows carry, else the rollout prompt."""
    if task.prompt:
        messages = task.prompt
    elif instruction:
        messages = [{"role": "user", "content": instruction}]
    else:
        messages = Policy.messages(task)
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]


def reward_model(task: Task, row: dict[str, Any]) -> dict[str, Any] | None:
    """{style, ground_truth} as AFM's reward functions read it; None when the task has no reference.

    qa: {"target": [aliases]} (qa_em, mhqa_train, grm_simple read ground_truth['target']);
    math: the LaTeX answer string (mathverify); code: the JSON string of tests (skywork json.loads it).
    A string ground truth in the task row is carried byte for byte.
    """
    given = row.get("reward_model") if isinstance(row.get("reward_model"), dict) else {}
    style = str(given.get("style") or "rule")
    if task.domain == "qa":
        return {"style": style, "ground_truth": {"target": task.answers}} if task.answers else None
    truth = given.get("ground_truth")
    if not isinstance(truth, str):
        truth = json.dumps(task.tests, ensure_ascii=False) if task.tests else (task.answers or [None])[0]
    return {"style": style, "ground_truth": truth} if truth else None


def extra_info(task: Task, row: dict[str, Any], query: Query, split: str, model: str | None) -> dict[str, Any]:
    """The task row's extra_info, with the index, the split, the question and our ids and pass rate."""
    given = dict(row.get("extra_info") or {}) if isinstance(row.get("extra_info"), dict) else {}
    index = given.get("index")
    info = {**given, "index": str(index) if index not in (None, "") else task.id, "split": split}
    if "split" in given:
        info["task_split"] = given["split"]
    if not given.get("tools_kwargs"):
        create = {"create_kwargs": {"data_source": task.source, "question": task.question}}
        # AFM's rollout offers a row exactly the tools its tools_kwargs name; each tool declares its domains.
        info.update(need_tools_kwargs=True, tools_kwargs={tool: create for tool in rl_tools(task.domain)})
    info.setdefault("question", task.question)  # AFM's batch reward manager reads extra_info['question']
    info.update(task_id=task.id, trajectory_ids=query.trajectory_ids, rollouts=query.rollouts,
                pass_rate=query.pass_rate, pass_rate_model=model)  # fmt: skip
    return info


def verl_row(task: Task, row: dict[str, Any], query: Query, split: str, model: str | None) -> dict[str, Any] | None:
    reward = reward_model(task, row)
    if reward is None:
        return None
    ability = row.get("ability")
    return {"data_source": task.source, "prompt": policy_prompt(task, query.instruction),
            "ability": str(ability) if ability else task.domain, "reward_model": reward,
            "extra_info": extra_info(task, row, query, split, model)}  # fmt: skip


def layout(row: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """Rows of one layout share one Arrow type: the ground truth's kind and the tools offered."""
    kind = "target" if isinstance(row["reward_model"]["ground_truth"], dict) else "text"
    return kind, tuple(sorted(row["extra_info"].get("tools_kwargs") or {}))


def run_folder(key: tuple[str, tuple[str, ...]]) -> str:
    """The folder of one layout, named for the AFM agent whose RL recipe (AFM/train/<agent>/rl) trains on it."""
    if key in AGENTS:
        return AGENTS[key]
    kind, tools = key
    return re.sub(r"[^\w+.-]", "_", f"{kind}_{'+'.join(tools) or 'no_tools'}")


def write_rows(rows: list[dict[str, Any]], folder: Path, split: str, file_type: str) -> list[Path]:
    """One folder per layout, each one RL run's data: <run_folder>/<split>-00000-of-00001.<ext>.

    No single file or run can hold two layouts: ground_truth is a struct for qa (AFM's qa_em reads
    ground_truth['target']) and a string for math/code (skywork json.loads it), which neither verl's
    concatenate_datasets nor AFM's pd.concat + Dataset.from_pandas can merge; and a rollout offers
    every key of tools_kwargs, so a struct union of both tool sets would offer a row the other's tools.
    """
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(layout(row), []).append(row)
    if len({run_folder(key) for key in groups}) < len(groups):  # tool names that differ only in odd characters
        raise ExportError(f"RL rows: two layouts share a folder name: {sorted(groups)}")
    paths = []
    for key in sorted(groups, key=run_folder):
        run = fresh_folder(folder / run_folder(key))
        path = run / f"{split}-00000-of-00001.{'parquet' if file_type == 'parquet' else 'jsonl'}"
        if file_type == "parquet":
            try:
                pq.write_table(pa.Table.from_pylist(groups[key]), path, compression="zstd")
            except (pa.ArrowException, TypeError) as exc:
                raise ExportError(f"RL rows of layout {key}: {str(exc).splitlines()[0]}") from None
        else:
            path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in groups[key]), "utf-8")
        paths.append(path)
    return paths


def queries_phrase(n: int) -> str:
    return f"{n} {'query' if n == 1 else 'queries'}"


def build_rows(store: Store, options: ExportOptions, rl: RLOptions, written: RLFiles) -> list[dict[str, Any]]:
    model = rl.pass_rate_model or policy_model(store)
    queries, in_both = read_queries(store, options, rl.split, model)
    note = written.notes.append
    if in_both:
        note(f"{queries_phrase(in_both)} also in an SFT split: left out of the RL rows (no query is in both)")
    paths = rl.tasks or recorded_task_files(store)
    if queries and not paths:
        note(
            f"{queries_phrase(len(queries))} not written: no task file to read their reference answers from "
            "(name one with --tasks FILE)"
        )
        return []
    tasks = read_task_rows(paths, {q.task_id for q in queries}) if queries else {}
    rows = [verl_row(*tasks[q.task_id], q, rl.split, model) if q.task_id in tasks else None for q in queries]
    if missing := sum(q.task_id not in tasks for q in queries):
        note(f"{queries_phrase(missing)} not found in {', '.join(paths)}: left out")
    if unanswered := sum(row is None for row in rows) - missing:
        note(f"{queries_phrase(unanswered)} with no reference answer to reward: left out")
    if queries and model is None:
        note("extra_info.pass_rate is null: no policy model's rollouts to read (set the pass-rate model)")
    return [row for row in rows if row is not None]


def clear_rl(out: Path, data_dir: str) -> None:
    """No RL split this time: drop the verl rows an earlier export left in the same folder."""
    replace_folder(fresh_folder(out / data_dir / f".{FOLDER}.partial"), out / data_dir / FOLDER, keep=False)


def write_rl(store: Store, options: ExportOptions, rl: RLOptions, out: Path, data_dir: str) -> RLFiles:
    """Write out/<data_dir>/verl/<run>/<split>-*.<ext>: one verl row per RL query (no folder when there is none)."""
    folder = Path(data_dir) / FOLDER
    written = RLFiles(folder)
    written.trajectories, _ = taskless_trajectories(store, options, rl.split)
    rows = build_rows(store, options, rl, written)
    final = out / folder
    staging = fresh_folder(final.with_name(f".{final.name}.partial"))
    paths = write_rows(rows, staging, rl.split, options.file_type) if rows else []
    worlds, world_files = write_worlds(store, options, rl.split, staging, written.notes)  # refine rows: verl_envs.py
    replace_folder(staging, final, keep=bool(rows or worlds))
    written.rows = len(rows) + worlds
    written.files = [folder / path.relative_to(staging) for path in paths] + [folder / p for p in world_files]
    if len(paths) > 1:
        runs = ", ".join(f"{folder / path.parent.name}/" for path in paths)
        written.notes.append(
            f"{len(paths)} RL folders, one per reward and tool layout ({runs}): train one RL run "
            "per folder (its files are that run's data.train_files); neither verl nor AFM's fork "
            "can load two layouts in one run"
        )
    return written
