"""Export formats from a real DuckDB run store: kept rows only, loss/weight flags, splits, loaders, card."""

from __future__ import annotations

import json
import re
from pathlib import Path

import datasets
import pytest

from factory.coa.afm import make_blocks, render_multiturn, render_single
from factory.export import ExportError, ExportOptions, export_dataset
from factory.records import Trajectory, Turn, TurnError, to_conversations
from factory.refine.store import save_trajectory
from factory.store import Store, utcnow

REFINE_KEPT = [f"refine:p{i}" for i in range(1, 7)]
COA_KEPT = ["coa:t1", "coa:t1b", *[f"coa:t{i}" for i in range(2, 7)], "import:t9"]
KEPT = set(REFINE_KEPT + COA_KEPT)
AFM_PAIRS = [
    ("think", "I should plan."), ("plan", "1. search the capital"), ("think", "Search it."),
    ("web_search", "capital of France"), ("observation", "Paris is the capital of France."),
    ("think", "The page says Paris."), ("answer", "Paris"),
]  # fmt: skip


def refine_trajectory(number: int) -> Trajectory:
    """Player turns with one mistake (kept in context, loss false) that the next turn corrects."""
    mistake = TurnError(type="parameter", feedback="There is no brass key here.")
    turns = [
        Turn(role="user", content=f"Task {number}: open the chest. You are in the hall.", kind="observation"),
        Turn(
            role="assistant",
            content="Thought: take the key.\nAction: take(brass key)",
            loss=False,
            kind="thought_action",
            error=mistake,
        ),
        Turn(role="user", content="Observation: There is no brass key here.", kind="observation"),
        Turn(role="assistant", content="Thought: look around.\nAction: look()", loss=True, kind="thought_action"),
        Turn(role="user", content="Observation: You see an iron key.", kind="observation"),
        Turn(role="assistant", content="Thought: take it.\nAction: take(iron key)", loss=True, kind="thought_action"),
    ]
    return Trajectory(id=f"refine:p{number}", source="refine", persona_id=f"p{number}", turns=turns)


def add_refine(store: Store, number: int, verified: bool = True) -> None:
    row = {"trajectory_id": f"refine:p{number}", "source": "refine", "persona_id": f"p{number}",
           "script_id": f"s{number}", "verified": verified, "reason": None if verified else "rule failed"}  # fmt: skip
    save_trajectory(store, row, refine_trajectory(number) if verified else None)
    store.upsert("scripts", {"script_id": f"s{number}", "persona_id": f"p{number}", "attempt": 0, "verified": True})


def add_coa(store: Store, trajectory_id: str, task_id: str, source: str = "coa", verified: bool = True) -> None:
    prompt = f"Answer the question ({task_id}): what is the capital of France?"
    blocks = make_blocks(AFM_PAIRS)
    single, turns = render_single(prompt, blocks), render_multiturn(prompt, blocks)
    row = {"trajectory_id": trajectory_id, "trace_id": trajectory_id, "task_id": task_id, "source": source,
           "variant": "mas", "verified": verified, "created_at": utcnow(), "stats": "{}"}  # fmt: skip
    if verified:
        row.update(turns=json.dumps([t.model_dump() for t in turns]), conversations=json.dumps(to_conversations(turns)),
                   prompt=single.prompt, completion=single.completion, final_answer="Paris", correct=True,
                   observation_spans=json.dumps([list(span) for span in single.observation_spans]))  # fmt: skip
    else:
        row.update(rule="tag_in_text", reason="grammar tag_in_text")
    store.upsert("trajectories", row)
    status = "answered" if verified else "exhausted"
    trace_source = "mas" if source == "coa" else "import:openai"
    store.upsert(
        "coa_traces",
        {"trace_id": trajectory_id, "task_id": task_id, "source": trace_source, "status": status, "variant": "mas"},
    )


def verdict(store: Store, trajectory_id: str, name: str, keep: bool, reason: str | None = None,
            weight: float = 1.0, split: str | None = None) -> None:  # fmt: skip
    store.execute(
        "INSERT INTO filter_verdicts (trajectory_id, filter, keep, reason, weight, split, config_hash) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [trajectory_id, name, keep, reason, weight, split, "h-" + name],
    )


def add_provenance(store: Store) -> None:
    system = json.dumps([{"role": "system", "content": "You write scripts."}, {"role": "user", "content": "go"}])
    for i, (stage, model, cost) in enumerate(
        [("script", "local", None), ("trajectory", "local", None), ("coa_planner", "openai/gpt-4o-mini", 0.0125)]
    ):
        store.upsert("llm_calls", {"request_hash": f"h{i}", "run_id": "run1", "stage": stage, "provider": "p",
                                   "model": model, "messages": system, "status": "ok", "prompt_tokens": 100 + i,
                                   "completion_tokens": 10, "cost_usd": cost, "cache_hits": 0})  # fmt: skip
    config = json.dumps({"llm": {"model": "local", "temperature": 0.7, "max_tokens": 1024}})
    store.upsert(
        "runs", {"run_id": "run1", "command": "refine", "config": config, "started_at": utcnow(), "status": "done"}
    )
    for position, (name, kind) in enumerate(
        [("complexity", "complexity"), ("dedup", "dedup"), ("upsample", "upsample")]
    ):
        store.upsert(
            "filter_configs",
            {
                "filter": name,
                "position": position,
                "kind": kind,
                "params": json.dumps({"min_turns": 3}),
                "config_hash": "h-" + name,
            },
        )


def make_run(run_dir: Path) -> Path:
    """Both paths, with rows that must not be exported: unverified ones and ones a filter dropped."""
    with Store.open(run_dir) as store:
        for number in range(1, 7):
            add_refine(store, number)
        add_refine(store, 7, verified=False)
        add_refine(store, 8)
        for i in range(2, 7):
            add_coa(store, f"coa:t{i}", f"t{i}")
        add_coa(store, "coa:t1", "t1")
        add_coa(store, "coa:t1b", "t1")  # a second trajectory of the same task: must share its split
        add_coa(store, "coa:t7", "t7", verified=False)
        add_coa(store, "coa:t8", "t8")
        add_coa(store, "import:t9", "t9", source="import")
        for trajectory_id in KEPT:
            verdict(store, trajectory_id, "complexity", True)
        verdict(store, "refine:p8", "complexity", False, "fewer than 2 corrections")
        verdict(store, "coa:t8", "dedup", False, "duplicate of coa:t2")
        verdict(store, "coa:t2", "upsample", True, "recovered from a low double-check", weight=2.0)
        add_provenance(store)
    return run_dir


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("run"))


def rows_of(out: Path, fmt: str, file_type: str = "parquet") -> dict[str, list[dict]]:
    """Every split of a format, read back with `datasets` itself."""
    extension = "parquet" if file_type == "parquet" else "jsonl"
    splits = {path.name.split("-")[0] for path in (out / fmt).glob(f"*.{extension}")}
    files = {split: str(out / fmt / f"{split}-*.{extension}") for split in splits}
    loaded = datasets.load_dataset("parquet" if file_type == "parquet" else "json", data_files=files)
    return {split: list(loaded[split]) for split in loaded}


def all_rows(out: Path, fmt: str, file_type: str = "parquet") -> list[dict]:
    return [row for rows in rows_of(out, fmt, file_type).values() for row in rows]


@pytest.fixture(scope="module")
def exported(run_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export")
    export_dataset(run_dir, out, ExportOptions(validation=0.3))
    return out


def test_every_format_holds_exactly_the_kept_rows(exported):
    assert {row["id"] for row in all_rows(exported, "sharegpt")} == KEPT
    assert {row["id"] for row in all_rows(exported, "messages")} == KEPT
    assert {row["id"] for row in all_rows(exported, "afm")} == set(COA_KEPT)  # AFM: coa/import rows only
    for row in all_rows(exported, "messages"):
        assert set(row) == {"id", "messages", "source", "task_id", "script_id", "weight"}
        assert row["source"] == row["id"].split(":")[0]


def test_sharegpt_keeps_the_mistake_in_context_without_loss(exported):
    rows = {row["id"]: row for row in all_rows(exported, "sharegpt")}
    refine = rows["refine:p1"]["conversations"]
    assert [turn["from"] for turn in refine] == ["human", "gpt"] * 3
    assert [turn["loss"] for turn in refine] == [False, False, False, True, False, True]
    assert refine[1]["value"].endswith("take(brass key)")
    assert rows["refine:p1"]["script_id"] == "s1" and rows["refine:p1"]["weight"] == 1.0
    coa = rows["coa:t3"]["conversations"]
    assert [turn["from"] for turn in coa] == ["human", "gpt", "human", "gpt"]
    assert "<observation>" in coa[2]["value"] and coa[2]["loss"] is False  # the tool turn is a human turn
    assert [turn["loss"] for turn in coa] == [False, True, False, True]
    assert rows["coa:t2"]["weight"] == 2.0  # the upsample filter's weight travels with the row


def test_messages_weight_only_on_assistant_turns(exported):
    rows = {row["id"]: row for row in all_rows(exported, "messages")}
    refine = rows["refine:p2"]["messages"]
    assert [m["role"] for m in refine] == ["user", "assistant"] * 3
    assert [m["weight"] for m in refine] == [None, 0, None, 1, None, 1]
    coa = rows["import:t9"]["messages"]
    assert [m["role"] for m in coa] == ["user", "assistant", "tool", "assistant"]
    assert [m["weight"] for m in coa] == [None, 1, None, 1]  # tool messages never train


def test_afm_rows_carry_observation_spans(exported):
    for row in all_rows(exported, "afm"):
        assert row["input"] == "" and row["instruction"].startswith("Answer the question")
        spans = row["observation_spans"]
        assert len(spans) == 1
        start, end = spans[0]
        assert row["output"][start:end] == "<observation>\nParis is the capital of France.\n</observation>\n\n"
        found = [m.span() for m in re.finditer(r"<observation>.*?</observation>", row["output"], re.S)]
        assert start <= found[0][0] and found[0][1] <= end


def test_hash_split_keeps_each_task_in_one_split(exported, tmp_path):
    splits = rows_of(exported, "sharegpt")
    groups = {name: {row["task_id"] or row["script_id"] for row in rows} for name, rows in splits.items()}
    assert set(groups) == {"train", "validation"} and groups["train"].isdisjoint(groups["validation"])
    with Store.open(tmp_path / "run") as store:  # 8 tasks with 5 trajectories each
        for task, copy in [(task, copy) for task in range(8) for copy in range(5)]:
            add_coa(store, f"coa:q{task}-{copy}", f"q{task}")
    export_dataset(tmp_path / "run", tmp_path / "out", ExportOptions(formats=["afm"], validation=0.5))
    splits = rows_of(tmp_path / "out", "afm")
    tasks = {name: [row["task_id"] for row in rows] for name, rows in splits.items()}
    assert set(tasks["train"]).isdisjoint(tasks["validation"])
    assert all(tasks[name].count(task) == 5 for name in tasks for task in tasks[name])


def test_a_split_filter_decides_the_splits(run_dir, tmp_path):
    with Store.open(run_dir) as store:
        for trajectory_id in KEPT:
            verdict(store, trajectory_id, "split", True, split="rl" if trajectory_id.startswith("coa") else "sft")
    try:
        result = export_dataset(run_dir, tmp_path, ExportOptions(formats=["messages"], validation=0.3))
    finally:
        with Store.open(run_dir) as store:
            store.execute("DELETE FROM filter_verdicts WHERE filter = 'split'")
    splits = rows_of(tmp_path, "messages")
    # The rl split is written as verl rows (one per query), never as SFT rows; import:t9 is not a coa row.
    assert result.selected == {"sft": 7} and set(splits) == {"sft"} and result.rl.trajectories == 7
    assert any("no task file" in warning for warning in result.warnings)


def test_upsample_repeat_writes_heavy_rows_k_times(run_dir, tmp_path):
    export_dataset(run_dir, tmp_path, ExportOptions(formats=["afm"], upsample="repeat", validation=0))
    rows = all_rows(tmp_path, "afm")
    heavy = [row for row in rows if row["id"] == "coa:t2"]
    assert len(heavy) == 2 and all(row["weight"] == 1.0 for row in heavy)
    assert len(rows) == len(COA_KEPT) + 1


def test_jsonl_export_reads_back(run_dir, tmp_path):
    export_dataset(run_dir, tmp_path, ExportOptions(formats=["sharegpt"], file_type="jsonl", validation=0))
    assert sorted(p.name for p in (tmp_path / "sharegpt").iterdir()) == ["train-00000-of-00001.jsonl"]
    rows = all_rows(tmp_path, "sharegpt", "jsonl")
    assert {row["id"] for row in rows} == KEPT
    assert all(isinstance(turn["loss"], bool) for row in rows for turn in row["conversations"])


def sharegpt_shape_problems(row: dict) -> list[str]:
    """LLaMA-Factory's sharegpt rules, as its SharegptDatasetConverter applies them (checked independently)."""
    messages = row["conversations"]
    if messages and messages[0]["from"] == "system":
        messages = messages[1:]
    problems = [
        f"turn {i}: {m['from']}"
        for i, m in enumerate(messages)
        if m["from"] not in (("human", "observation"), ("gpt", "function_call"))[i % 2]
    ]
    if len(messages) % 2:
        problems.append("odd number of turns")
    return problems


def test_sharegpt_export_has_llamafactory_shape(exported):
    for row in all_rows(exported, "sharegpt"):
        assert sharegpt_shape_problems(row) == [], row["id"]


def test_empty_run_folders_give_one_line_errors(tmp_path):
    with pytest.raises(ExportError, match="not a run folder"):
        export_dataset(tmp_path / "missing", tmp_path / "out")
    Store.open(tmp_path / "empty").close()
    with pytest.raises(ExportError, match="no trajectories") as info:
        export_dataset(tmp_path / "empty", tmp_path / "out")
    assert "\n" not in str(info.value)
    with Store.open(tmp_path / "dropped") as store:
        add_refine(store, 1)
        verdict(store, "refine:p1", "complexity", False, "too short")
    with pytest.raises(ExportError, match="filters dropped all 1 verified"):
        export_dataset(tmp_path / "dropped", tmp_path / "out")


def test_asking_for_afm_of_a_refine_only_run_is_an_error(tmp_path):
    with Store.open(tmp_path / "run") as store:
        add_refine(store, 1)
    with pytest.raises(ExportError, match="no AFM rows"):
        export_dataset(tmp_path / "run", tmp_path / "out", ExportOptions(formats=["afm"]))
    result = export_dataset(tmp_path / "run", tmp_path / "out")  # "all": AFM skipped with a note
    assert [f.name for f in result.formats] == ["sharegpt", "messages", "llamafactory"]
    assert any("afm: skipped" in warning for warning in result.warnings)
    assert any("trl: skipped" in warning for warning in result.warnings)  # pre-tokenized: needs --tokenizer


def test_a_bad_curation_split_name_is_a_one_line_error(tmp_path):
    with Store.open(tmp_path / "run") as store:
        add_refine(store, 1)
        verdict(store, "refine:p1", "split", True, split="train set")
    with pytest.raises(ExportError, match="'train set' is not a usable split name"):
        export_dataset(tmp_path / "run", tmp_path / "out")


def test_sharegpt_joins_same_side_turns_and_drops_a_trailing_observation(tmp_path):
    turns = [Turn(role="system", content="You are an agent."), Turn(role="user", content="Find the file."),
             Turn(role="tool", content="ls: a.txt"), Turn(role="assistant", content="Open a.txt.", loss=True),
             Turn(role="assistant", content="cat b.txt", loss=True, error=TurnError(type="logic")),
             Turn(role="tool", content="no such file")]  # fmt: skip
    with Store.open(tmp_path / "run") as store:
        store.upsert(
            "trajectories",
            {
                "trajectory_id": "import:x",
                "source": "import",
                "task_id": "x",
                "verified": True,
                "turns": json.dumps([t.model_dump() for t in turns]),
            },
        )
    export_dataset(tmp_path / "run", tmp_path / "out", ExportOptions(formats=["sharegpt", "messages"]))
    (row,) = all_rows(tmp_path / "out", "sharegpt")
    assert row["conversations"] == [
        {"from": "system", "value": "You are an agent.", "loss": False},
        {"from": "human", "value": "Find the file.\nls: a.txt", "loss": False},
        {"from": "gpt", "value": "Open a.txt.\ncat b.txt", "loss": False},  # holds a mistake: does not train
    ]
    assert sharegpt_shape_problems(row) == []
    (message_row,) = all_rows(tmp_path / "out", "messages")
    assert [m["weight"] for m in message_row["messages"]] == [None, None, None, 1, 0, None]
