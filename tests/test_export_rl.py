"""The RL hand-off: the RL split exported as verl rows, read by verl's own data and reward code.

A real store holds coa trajectories of real tasks (../shared/data/tasks) with rollouts; the real filter
runner sends the queries of low pass rate to `rl`; the export writes them as verl rows. verl itself
(`pip install --no-deps verl==0.9.1 ...`, see the README) loads the files through RLHFDataset with a
real tokenizer and scores them with its reward functions. AFM's verl fork is not on PyPI and its code
may not be copied here, so the field reads of its reward manager and reward functions are written out
below from OPPO-PersonalAI/Agent_Foundation_Models @ 8f9451697abbde18aa91241d6ba5171eab660261:
verl/verl/workers/reward_manager/afm.py (_select_rm_score_fn, reward_model['ground_truth'], index),
verl/verl/workers/reward_manager/batch.py (extra_info['question']),
verl/verl/utils/reward_score/mathverify.py, qa_em.py, mhqa_train.py, livecodebench/skywork.py,
verl/verl/utils/dataset/rl_dataset.py and sglang_rollout.py (extra_info index / tools_kwargs).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from filter_rows import add_coa, add_rollouts, write_config
from task_files import tasks_folder

from factory.coa.afm import make_blocks, render_multiturn, render_single
from factory.export import ExportOptions, export_dataset
from factory.export.verl import RLOptions
from factory.filters import run_filters
from factory.records import to_conversations
from factory.store import Store
from factory.tasks import load_tasks

TASKS = tasks_folder()  # ../shared's task files, or the subsets a bare clone ships (the first rows are the same)
FILES = ["math500.parquet", "amc23.parquet", "livecodebench_v5.parquet", "nq_full.jsonl"]
PICK = {"math500.parquet": 6, "amc23.parquet": 2, "livecodebench_v5.parquet": 2, "nq_full.jsonl": 4}
# Correct rollouts out of 4 per task (by file and row); None: no rollouts. Pass rate <= 0.3 goes to rl.
CORRECT = {"math500.parquet": [0, 1, 3, 0, 1, 4], "amc23.parquet": [0, 2], "livecodebench_v5.parquet": [1, 4],
           "nq_full.jsonl": [0, 1, 4, None]}  # fmt: skip
FILTERS = """
filters:
  - {name: hard, kind: pass_rate, model: policy, max_pass_rate: 0.75, min_samples: 4, missing: keep,
     drop_all_correct_domains: []}
  - name: rl_queries
    kind: split
    splits: {rl: 1.0, sft: 0.0}
    where: >-
      source = 'coa' AND task_id IN (SELECT task_id FROM rollouts WHERE model = 'policy'
      GROUP BY task_id HAVING avg(correct::INTEGER) <= 0.3)
"""
AFM_PAIRS = [("think", "Plan first."), ("plan", "1. compute"), ("think", "Run it."), ("code", "print(1)"),
             ("observation", "1"), ("think", "Done."), ("answer", "\\boxed{1}")]  # fmt: skip
# AFM's reward manager picks a reward function by data_source (afm.py, _select_rm_score_fn), and the
# web/mhqa recipes score qa rows with qa_em / mhqa_train; these are the names it knows.
AFM_SCORED = {"nq", "triviaqa", "popqa", "hotpotqa", "2wikimultihopqa", "musique", "bamboogle", "math_dapo", "aime24",
              "aime25", "MATH", "MATH500", "amc23", "OlympiadBench", "skywork_livecodebench_v5"}  # fmt: skip
VERL_COLUMNS = ["data_source", "prompt", "ability", "reward_model", "extra_info"]


def picked_tasks():
    return {name: load_tasks(TASKS / name, limit=PICK[name]) for name in FILES}


def afm_row(task_id: str) -> dict:
    prompt = f"Solve the task with think, plan, code and answer.\n\nTask:\n{task_id}"
    blocks = make_blocks(AFM_PAIRS)
    single, turns = render_single(prompt, blocks), render_multiturn(prompt, blocks)
    return {"task_id": task_id, "prompt": single.prompt, "completion": single.completion, "correct": True,
            "turns": json.dumps([t.model_dump() for t in turns]), "conversations": json.dumps(to_conversations(turns)),
            "observation_spans": json.dumps([list(s) for s in single.observation_spans]), "stats": "{}"}  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The run, its tasks, and its export (SFT formats plus the verl rows)."""
    root = tmp_path_factory.mktemp("rl")
    tasks = picked_tasks()
    with Store.open(root / "run") as store:
        for name, file_tasks in tasks.items():
            for task, correct in zip(file_tasks, CORRECT[name]):
                add_coa(store, f"coa:{task.id}", task.question, 1, **afm_row(task.id))
                if correct is not None:
                    add_rollouts(store, task.id, "policy", [n < correct for n in range(4)])
        math = tasks["math500.parquet"]
        add_coa(store, f"import:{math[3].id}", math[3].question, 2, source="import", **afm_row(math[3].id))
        add_coa(store, f"coa:{math[4].id}#2", math[4].question, 3, **afm_row(math[4].id))  # a second RL trajectory
    run_filters(root / "run", write_config(root, FILTERS))
    options = ExportOptions(formats=["messages", "afm"], validation=0)
    rl = RLOptions(tasks=[str(TASKS / name) for name in FILES])
    result = export_dataset(root / "run", root / "out", options, rl=rl)
    return root, tasks, result


def verl_rows(out: Path) -> list[dict]:
    return [row for path in sorted((out / "verl").glob("*/rl-*.parquet")) for row in pq.read_table(path).to_pylist()]


def run_folders(out: Path) -> dict[str, list[Path]]:
    """The files of each RL run folder under out/verl, as a user lists them in data.train_files."""
    return {folder.name: sorted(folder.glob("rl-*.parquet")) for folder in sorted((out / "verl").iterdir())}


def expected_rl(tasks) -> set[str]:
    """Pass rate <= 0.3, and not MATH500 row 3, whose imported trajectory sits in the SFT split."""
    ids = {t.id for name, ts in tasks.items() for t, ok in zip(ts, CORRECT[name]) if ok is not None and ok <= 1}
    return ids - {tasks["math500.parquet"][3].id}


def test_one_row_per_low_pass_rate_query_and_none_in_both(run):
    root, tasks, result = run
    rows = verl_rows(root / "out")
    ids = [row["extra_info"]["task_id"] for row in rows]
    assert sorted(ids) == sorted(expected_rl(tasks)) and len(ids) == len(set(ids))
    sft = [row for name in ("messages", "afm") for p in (root / "out" / name).glob("*.parquet")
           for row in pq.read_table(p).to_pylist()]  # fmt: skip
    assert sft and {row["task_id"] for row in sft}.isdisjoint(ids)
    files = [p.name.split("-")[0] for name in ("messages", "afm") for p in (root / "out" / name).glob("*.parquet")]
    assert set(files) == {"train"} and set(result.selected) == {"train"}
    assert not any(row["id"].startswith("coa:") and row["task_id"] in ids for row in sft)
    math4 = tasks["math500.parquet"][4].id
    assert next(r for r in rows if r["extra_info"]["task_id"] == math4)["extra_info"]["trajectory_ids"] == [
        f"coa:{math4}",
        f"coa:{math4}#2",
    ]
    assert any("rl: 1 query also in an SFT split" in w for w in result.warnings)
    assert result.rl.rows == len(ids) and result.rl.trajectories == len(ids) + 2  # + the second and the one in both


def test_rows_have_verl_fields_and_carry_the_task_file(run):
    root, tasks, result = run
    paths = sorted((root / "out" / "verl").glob("*/rl-*.parquet"))
    names = ["code_agent/rl-00000-of-00001.parquet", "web_agent/rl-00000-of-00001.parquet"]
    assert [p.relative_to(root / "out" / "verl").as_posix() for p in paths] == names
    assert [p.as_posix() for p in result.rl.files] == [f"verl/{name}" for name in names]
    assert any("2 RL folders" in w and "verl/web_agent/" in w and "one RL run per folder" in w for w in result.warnings)
    message = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    for path in paths:
        schema = pq.read_schema(path)
        assert schema.names == VERL_COLUMNS and schema.field("prompt").type == message
        assert schema.field("data_source").type == schema.field("ability").type == pa.string()
    by_id = {row["extra_info"]["task_id"]: row for row in verl_rows(root / "out")}
    originals = {name: pq.read_table(TASKS / name).to_pylist() for name in FILES if name.endswith(".parquet")}
    for name, file_rows in originals.items():
        for task, original in zip(tasks[name], file_rows):
            if task.id in by_id:  # the task file's own row, carried: prompt, reference, ability, source
                row = by_id[task.id]
                assert {k: row[k] for k in VERL_COLUMNS[:4]} == {k: original[k] for k in VERL_COLUMNS[:4]}
                info = row["extra_info"]
                assert info["index"] == original["extra_info"]["index"] and info["split"] == "rl"
                assert info["tools_kwargs"] == original["extra_info"]["tools_kwargs"]
                assert info["task_split"] == original["extra_info"]["split"]


def test_plain_qa_rows_get_the_afm_instruction_and_alias_targets(run):
    root, tasks, result = run
    rows = {row["extra_info"]["task_id"]: row for row in verl_rows(root / "out")}
    with Store.open(root / "run", read_only=True) as store:
        stored = dict(store.query("SELECT task_id, prompt FROM trajectories WHERE source = 'coa'"))
    for task, correct in zip(tasks["nq_full.jsonl"], CORRECT["nq_full.jsonl"]):
        if task.id not in rows:
            continue
        row = rows[task.id]
        assert row["data_source"] == "nq" and row["ability"] == "qa"
        assert row["prompt"] == [{"role": "user", "content": stored[task.id]}]
        assert row["reward_model"] == {"style": "rule", "ground_truth": {"target": task.answers}}
        info = row["extra_info"]
        assert set(info["tools_kwargs"]) == {"web_search", "crawl_page"} and info["need_tools_kwargs"] is True
        assert info["question"] == task.question and info["index"] == task.id
        assert info["pass_rate"] == correct / 4 and info["rollouts"] == 4 and info["pass_rate_model"] == "policy"


def afm_reads(row: dict) -> None:
    """What AFM's verl fork reads from a row, per data_source (files in the module docstring)."""
    from math_verify import parse, verify

    assert row["data_source"] in AFM_SCORED  # else _select_rm_score_fn raises NotImplementedError
    info, truth = row["extra_info"], row["reward_model"]["ground_truth"]
    assert isinstance(info["index"], str) and isinstance(info["question"], str)  # afm.py idx; batch.py questions
    assert info["tools_kwargs"] and all(isinstance(v, dict) for v in info["tools_kwargs"].values())
    if row["data_source"] == "nq":  # qa_em / mhqa_train: em_check(answer, ground_truth['target'])
        assert isinstance(truth["target"], list) and all(isinstance(a, str) and a for a in truth["target"])
    elif row["ability"] == "coding":  # skywork: json.loads(ground_truth) must give a dict of tests
        tests = json.loads(truth)
        assert isinstance(tests, dict) and (tests.get("question_id") or tests.get("inputs") or tests.get("stdin"))
    else:  # mathverify: verify(parse('\\boxed{gt}'), parse(<the reply's answer>)); gt a string
        assert isinstance(truth, str) and verify(parse(f"\\boxed{{{truth}}}"), parse(f"\\boxed{{{truth}}}"))


def test_afm_reward_functions_read_the_rows(run):
    root, _tasks, _result = run
    rows = verl_rows(root / "out")
    assert {row["data_source"] for row in rows} == {"MATH500", "amc23", "skywork_livecodebench_v5", "nq"}
    for row in rows:
        afm_reads(row)


def verl_dataset(paths: list[Path], tmp_path: Path):
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from factory.mask.tiny import tiny_tokenizer

    config = OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 100_000, "filter_overlong_prompts": True,
                               "filter_overlong_prompts_workers": 1, "cache_dir": str(tmp_path / "cache")})  # fmt: skip
    return RLHFDataset([str(p) for p in paths], tiny_tokenizer(), config), tiny_tokenizer()


def test_verl_rlhf_dataset_loads_every_row(run, tmp_path):
    pytest.importorskip("verl", reason="verl is installed with --no-deps (README)")
    root, _tasks, _result = run
    for paths in run_folders(root / "out").values():  # every file of a run folder, as data.train_files
        ours = [row for path in paths for row in pq.read_table(path).to_pylist()]
        dataset, tokenizer = verl_dataset(paths, tmp_path)
        assert len(dataset) == len(ours)  # a prompt its chat template cannot render would be filtered out
        for item, row in zip(dataset, ours):
            assert item["raw_prompt"] == row["prompt"] and item["data_source"] == row["data_source"]
            assert item["index"] == row["extra_info"]["index"] and item["tools_kwargs"]
            assert item["reward_model"]["ground_truth"] == row["reward_model"]["ground_truth"]
            text = tokenizer.apply_chat_template(item["raw_prompt"], add_generation_prompt=True, tokenize=False)
            assert text.endswith("<|im_start|>assistant\n") and row["prompt"][-1]["content"] in text


def afm_fork_dataset(paths: list[Path]):
    """How AFM's fork loads data.train_files (verl/utils/dataset/rl_dataset.py, _read_files_and_tokenize):
    pandas reads each parquet file, concatenates the frames, and datasets.Dataset.from_pandas converts them."""
    import datasets
    import pandas as pd

    return datasets.Dataset.from_pandas(pd.concat([pd.read_parquet(path) for path in paths]))


def test_each_run_folder_loads_whole_in_afm_fork_and_verl(run, tmp_path):
    """All files of a run folder load together as written: the code run mixes three task files (math, code)."""
    root, _tasks, _result = run
    folders = run_folders(root / "out")
    ours = {name: [row for path in paths for row in pq.read_table(path).to_pylist()] for name, paths in folders.items()}
    assert {name: {row["data_source"] for row in rows} for name, rows in ours.items()} == {
        "code_agent": {"MATH500", "amc23", "skywork_livecodebench_v5"},
        "web_agent": {"nq"},
    }
    loaders = [afm_fork_dataset]
    if importlib.util.find_spec("verl"):
        loaders.append(lambda paths: verl_dataset(paths, tmp_path)[0])
    for load in loaders:
        for name, paths in folders.items():
            dataset = load(paths)
            assert len(dataset) == len(ours[name])
            for item, row in zip(dataset, ours[name]):  # what the rollout offers and the reward reads
                info = item.get("extra_info") or {}
                tools = item.get("tools_kwargs") or info["tools_kwargs"]
                assert set(tools) == set(row["extra_info"]["tools_kwargs"]) and all(tools.values())
                assert item["reward_model"]["ground_truth"] == row["reward_model"]["ground_truth"]
                prompt = item["raw_prompt"] if "raw_prompt" in item else item["prompt"]  # verl: raw_prompt
                assert prompt == row["prompt"] and item["data_source"] == row["data_source"]


def test_two_run_folders_do_not_load_together(run, tmp_path):
    """Why one folder per run: neither loader merges a {target} ground truth with a string one."""
    root, _tasks, _result = run
    everything = [path for paths in run_folders(root / "out").values() for path in paths]
    with pytest.raises(pa.ArrowInvalid, match="cannot mix struct and non-struct"):
        afm_fork_dataset(everything)
    if importlib.util.find_spec("verl"):
        with pytest.raises(ValueError, match="can't be aligned"):
            verl_dataset(everything, tmp_path)


def test_verl_reward_functions_score_the_references(run):
    pytest.importorskip("verl", reason="verl is installed with --no-deps (README)")
    from verl.utils.reward_score import default_compute_score, math_reward, search_r1_like_qa_em

    root, _tasks, _result = run
    for row in verl_rows(root / "out"):
        truth = row["reward_model"]["ground_truth"]
        if row["data_source"] == "nq":  # verl's Search-R1 EM reads ground_truth['target'] as we write it
            assert search_r1_like_qa_em.compute_score(f"<answer>{truth['target'][0]}</answer>", truth) == 1
            assert search_r1_like_qa_em.compute_score("<answer>not it at all</answer>", truth) == 0
        elif row["ability"] != "coding":
            assert math_reward.compute_score(f"so \\boxed{{{truth}}}", truth) == 1.0
            assert math_reward.compute_score("so \\boxed{-12345}", truth) == 0.0
        # Upstream verl dispatches on its own source names, not AFM's: run AFM's fork (reward_manager=afm)
        # or a custom_reward_function (docs/rl_handoff.md).
        with pytest.raises(NotImplementedError):
            default_compute_score(row["data_source"], "<answer>x</answer>", truth)


def test_rl_split_without_task_files_is_a_note_not_sft_rows(run, tmp_path):
    root, tasks, _result = run
    result = export_dataset(
        root / "run", tmp_path, ExportOptions(formats=["afm"], validation=0), rl=RLOptions()
    )  # the run's configs name no task file
    assert result.rl.rows == 0 and not (tmp_path / "verl").exists()
    assert any("not written: no task file" in w for w in result.warnings)
    assert sorted(p.name for p in (tmp_path / "afm").iterdir()) == ["dataset_info.json", "train-00000-of-00001.parquet"]
    afm = pq.read_table(tmp_path / "afm" / "train-00000-of-00001.parquet").to_pylist()
    assert len(afm) == 4  # math 2, math 3 (its imported trajectory), amc 1, nq 3


def test_jsonl_and_another_split_name(run, tmp_path):
    """Name `train` the RL split: its queries become verl rows (and `rl` is then an SFT split)."""
    root, tasks, _result = run
    rl = RLOptions(split="train", tasks=[str(TASKS / "math500.parquet")])
    result = export_dataset(
        root / "run", tmp_path, ExportOptions(formats=["afm"], file_type="jsonl", validation=0), rl=rl
    )
    rows = [json.loads(line) for p in sorted((tmp_path / "verl").glob("*/train-*.jsonl")) for line in p.open()]
    assert rows and all(list(row) == VERL_COLUMNS for row in rows)
    assert {row["extra_info"]["split"] for row in rows} == {"train"}
    assert any("not found in" in w for w in result.warnings)  # amc, lcb and nq tasks are in other files


def test_task_files_default_to_the_ones_the_run_recorded(run, tmp_path):
    root, tasks, _result = run
    config = json.dumps({"coa": {"tasks": str(TASKS / "amc23.parquet")}})
    with Store.open(root / "run") as store:
        store.execute(
            "INSERT INTO runs VALUES ('rl-test', 'coa', ?, datetime('now'), datetime('now'), 'done')", [config]
        )
    try:
        result = export_dataset(root / "run", tmp_path, ExportOptions(formats=["afm"], validation=0))
    finally:
        with Store.open(root / "run") as store:
            store.execute("DELETE FROM runs WHERE run_id = 'rl-test'")
    assert [row["extra_info"]["task_id"] for row in verl_rows(tmp_path)] == [tasks["amc23.parquet"][0].id]
    with Store.open(root / "run") as store:  # no RL split any more: the old verl rows go too
        store.execute("UPDATE filter_verdicts SET split = 'sft' WHERE split = 'rl'")
    try:
        result = export_dataset(root / "run", tmp_path, ExportOptions(formats=["afm"], validation=0))
    finally:
        with Store.open(root / "run") as store:
            store.execute("UPDATE filter_verdicts SET split = 'rl' WHERE split = 'sft' AND filter = 'rl_queries'")
    assert result.rl is None and not (tmp_path / "verl").exists() and set(result.selected) == {"sft", "train"}
