"""Pass rates over a real DuckDB rollouts table: only the current --n samples count."""

from loopback_server import ok
from test_passrate import run_cli

from factory.passrate import pass_rates, summarize
from factory.store import Store, utcnow


def add_rollouts(store: Store, task_id: str, correct: list[bool | None], model: str = "m") -> None:
    for index, right in enumerate(correct):
        store.upsert("rollouts", {"task_id": task_id, "model": model, "sample_index": index, "completion": "c",
                                  "answer": "a", "correct": right, "score": None if right is None else float(right),
                                  "request_hash": f"{task_id}-{index}", "created_at": utcnow()})  # fmt: skip


def test_n_counts_only_sample_indexes_below_it(tmp_path):
    with Store.open(tmp_path) as store:
        add_rollouts(store, "t1", [True, True, False, True, False, False, False, False])  # 8 from an earlier --n 8
        add_rollouts(store, "t2", [True, True, None, True, True, True, True, True])
        everything = {r["task_id"]: r for r in pass_rates(store, "m").to_pylist()}
        first_four = {r["task_id"]: r for r in pass_rates(store, "m", n=4).to_pylist()}
        summary_all, summary_four = summarize(store, "m", 0.5), summarize(store, "m", 0.5, n=4)
    assert everything["t1"]["n"] == 8 and everything["t1"]["pass_rate"] == 3 / 8
    assert (first_four["t1"]["n"], first_four["t1"]["n_correct"], first_four["t1"]["pass_rate"]) == (4, 3, 0.75)
    assert (first_four["t2"]["n"], first_four["t2"]["n_failed"], first_four["t2"]["uniform"]) == (3, 1, True)
    assert summary_all["rollouts"] == 16 and summary_all["kept"] == 1  # t1 at 3/8 <= 0.5
    assert summary_four["rollouts"] == 8 and summary_four["scored"] == 7 and summary_four["kept"] == 0
    assert summary_four["all_right"] == 1 and summary_four["histogram"]["(0.75, 1)"] == 0


def test_command_summary_counts_only_the_current_n(server, tmp_path, capsys):
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"id": "q1", "question": "Capital of France?", "answer": "Paris"}\n', encoding="utf-8")
    server.route("Capital of France?", *[ok("<answer>Paris</answer>")] * 4)
    argv = ["passrate", str(tmp_path / "run"), "--tasks", str(path), "--model", "loopback",
            "--base-url", server.base_url, "-q", "--n"]  # fmt: skip
    assert run_cli([*argv, "4"]) == 0
    assert "tasks: 1, rollouts: 4 (4 scored" in capsys.readouterr().out
    assert run_cli([*argv, "2"]) == 0  # the 4 stored samples stay; the summary is over samples 0 and 1
    out = capsys.readouterr().out
    assert "this run: 0 requested" in out and "tasks: 1, rollouts: 2 (2 scored" in out
