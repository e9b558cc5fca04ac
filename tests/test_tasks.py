"""Tasks from the real AFM/verl task files (read in place from ../shared/data/tasks, or from the subsets a bare
clone ships, tests/data/tasks; whole-file figures need the shared files)."""

import json
from collections import Counter

import pytest
from task_files import SHARED, tasks_folder, whole_file

from factory.tasks import Task, TaskError, load_tasks, read_tasks, sample_tasks

DATA = tasks_folder()
WHOLE = DATA == SHARED  # the full files: their row counts and kinds can be checked


@pytest.fixture(scope="module")
def loaded():
    names = ("math500.parquet", "amc23.parquet", "livecodebench_v5.parquet", "nq_full.jsonl")
    return {name.split(".")[0]: load_tasks(DATA / name) for name in names}


def test_each_file_loads_whole_with_unique_ids_and_its_domain(loaded):
    whole_file("math500.parquet")
    expected = {
        "math500": (500, "math"),
        "amc23": (40, "math"),
        "livecodebench_v5": (167, "code"),
        "nq_full": (3610, "qa"),
    }
    for name, (count, domain) in expected.items():
        tasks = loaded[name]
        assert len(tasks) == count and len({t.id for t in tasks}) == count, name
        assert {t.domain for t in tasks} == {domain}, name


def test_the_question_is_the_text_after_the_afm_task_marker(loaded):
    first = loaded["math500"][0]
    assert first.id == "MATH500/0" and first.source == "MATH500"
    assert first.question.startswith("Convert the point $(0,3)$ in rectangular coordinates to polar")
    assert first.answers == [r"\left( 3, \frac{\pi}{2} \right)"] and first.tests is None
    assert first.prompt[-1]["role"] == "user" and first.prompt[-1]["content"].endswith(first.question)
    assert first.extra["ability"] == "fact-reasoning" and first.extra["index"] == "0"
    for task in loaded["math500"] + loaded["livecodebench_v5"]:
        assert "Task:" not in task.question and "<think>" not in task.question, task.id
    assert loaded["amc23"][0].answers == ["27.0"]


def test_livecodebench_rows_carry_stdin_or_functional_tests(loaded):
    tasks = {t.id.split("/")[-1]: t for t in loaded["livecodebench_v5"]}
    kinds = Counter("functional" if "functional" in t.tests else "stdin" for t in tasks.values())
    assert kinds == {"stdin": 105, "functional": 62} if WHOLE else set(kinds) == {"stdin", "functional"}
    stdin = tasks["abc374_a"]
    assert stdin.tests["stdin"] == ["takahashisan\n", "aokikun\n"] and stdin.tests["expected_output"] == [
        "Yes\n",
        "No\n",
    ]
    functional = tasks["3636"]
    assert functional.tests["func_name"] == "isBalanced"
    assert "Solution().isBalanced('24123')" in functional.tests["functional"]
    assert functional.extra["starter_code"].startswith("class Solution:") and functional.answers == []
    assert all(t.tests and not t.answers for t in tasks.values())


def test_nq_rows_keep_their_aliases_and_get_stable_hash_ids(loaded):
    nq = loaded["nq_full"]
    assert nq[0].question == "who got the first nobel prize in physics" and nq[0].answers == ["Wilhelm Conrad Röntgen"]
    assert nq[2].answers == ["Olivia", "MFSK"] and nq[0].prompt is None and nq[0].source == "nq"
    assert nq[0].id.startswith("nq/h") and load_tasks(DATA / "nq_full.jsonl", limit=1)[0].id == nq[0].id


def test_domain_override_and_limit():
    tasks = load_tasks(DATA / "amc23.parquet", domain="qa", limit=5)
    assert len(tasks) == 5 and {t.domain for t in tasks} == {"qa"}
    with pytest.raises(TaskError, match="unknown task domain 'maths'"):
        load_tasks(DATA / "amc23.parquet", domain="maths")


def test_sampling_is_seeded_order_free_and_nested(loaded):
    tasks = loaded["nq_full"]
    picked = sample_tasks(tasks, 20, seed=7)
    assert [t.id for t in picked] == [t.id for t in sample_tasks(list(reversed(tasks)), 20, seed=7)]
    assert [t.id for t in sample_tasks(tasks, 10, seed=7)] == [t.id for t in picked[:10]]
    assert [t.id for t in sample_tasks(tasks, 20, seed=8)] != [t.id for t in picked]
    assert len(sample_tasks(tasks[:3], 10)) == 3


def test_datasets_objects_and_saved_folders_load_the_same(tmp_path):
    import datasets

    rows = [json.loads(line) for line in (DATA / "nq_full.jsonl").read_text().splitlines()[:30]]
    direct = load_tasks(datasets.Dataset.from_list(rows))
    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(tmp_path / "nq"))
    saved = load_tasks(tmp_path / "nq", split="test")
    from_file = load_tasks(DATA / "nq_full.jsonl", limit=30)
    assert [t.model_dump() for t in direct] == [t.model_dump() for t in saved] == [t.model_dump() for t in from_file]
    parquet = load_tasks(datasets.Dataset.from_parquet(str(DATA / "livecodebench_v5.parquet")))
    assert len(parquet) == (167 if WHOLE else 24) and parquet[0].tests["expected_output"] == ["17\n", "1\n", "89\n"]


def test_search_r1_rows_and_bare_prompts(tmp_path):
    row = {
        "data_source": "hotpotqa",
        "prompt": [{"role": "user", "content": "Answer with tags.\n\nTask: Who wrote Dune?"}],
        "reward_model": {"ground_truth": {"target": ["Frank Herbert", "Herbert"]}},
        "extra_info": {"index": 4},
    }
    path = tmp_path / "search.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps({"prompt": "What is 2+2?", "answer": 4}) + "\n")
    first, second = load_tasks(path)
    assert (first.id, first.question, first.domain) == ("hotpotqa/4", "Who wrote Dune?", "qa")
    assert first.answers == ["Frank Herbert", "Herbert"]
    assert second.question == "What is 2+2?" and second.answers == ["4"] and second.source == "search.jsonl"


def test_bad_rows_are_skipped_and_counted_or_fatal_when_strict(tmp_path):
    path = tmp_path / "mixed.jsonl"
    rows = [
        {"question": "capital of France?", "answer": ["Paris"]},
        {"question": "  ", "answer": ["x"]},
        {"question": "capital of France?", "answer": ["Paris"]},
        {"question": "sum?", "reward_model": {"ground_truth": '{"stdin": ["1"'}, "ability": "coding"},
        {"question": "why?", "answer": "because", "extra_info": 5},
    ]
    path.write_text("\n".join(json.dumps(row) for row in rows))
    result = read_tasks(path)
    assert [t.question for t in result.tasks] == ["capital of France?"]
    assert result.skipped == {"no question": 1, "duplicate id": 1, "bad tests": 1, "bad extra_info": 1}
    assert result.first_problem.startswith(f"{path}:2: ")
    with pytest.raises(TaskError, match=r"mixed.jsonl:2: no question"):
        load_tasks(path, strict=True)


def test_a_question_the_size_of_a_document_is_skipped_and_counted(tmp_path):
    from factory.tasks.loaders import MAX_QUESTION_CHARS

    path = tmp_path / "huge.jsonl"
    rows = [{"question": "capital of France?", "answer": ["Paris"]},
            {"question": "x" * (MAX_QUESTION_CHARS + 1), "answer": ["y"]},
            {"question": "q" * MAX_QUESTION_CHARS, "answer": ["z"]}]  # fmt: skip
    path.write_text("\n".join(json.dumps(row) for row in rows))
    result = read_tasks(path)
    assert [len(t.question) for t in result.tasks] == [18, MAX_QUESTION_CHARS]  # the bound is inclusive
    assert result.skipped == {"question too long": 1}
    assert result.first_problem == f"{path}:2: 32,001 characters (a question is at most 32,000)"


def test_unreadable_files_are_one_line_task_errors(tmp_path):
    (tmp_path / "broken.jsonl").write_text('{"question": "a", "answer": ["b"]}\n{"question": \n')
    (tmp_path / "tasks.csv").write_text("question,answer\n")
    (tmp_path / "odd.jsonl").write_text('{"text": "no question here"}\n')
    cases = {
        "broken.jsonl": r"broken.jsonl:2: not valid JSON",
        "tasks.csv": "unsupported task file type '.csv'",
        "missing.parquet": "no such task file",
        "odd.jsonl": r"odd.jsonl:1: no 'question' or 'prompt' field",
    }
    for name, message in cases.items():
        with pytest.raises(TaskError, match=message):
            load_tasks(tmp_path / name)


def test_a_task_is_a_strict_record():
    with pytest.raises(ValueError):
        Task(id="x", question="q", domain="poetry", source="s")
    with pytest.raises(ValueError):
        Task(id="x", question="q", domain="qa", source="s", surprise=1)
