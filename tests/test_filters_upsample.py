"""The upsample filter's `recovery` trigger on a real store: it weighs exactly the refine rows whose fix
took several tries or whose first mistake came late, where `corrections` weighs every verified refine row.
The dataset card states the rule and how many rows it reweighted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from filter_rows import add_coa, add_refine, coa_stats, verdicts, write_config

from factory.errors import ConfigError
from factory.export import ExportOptions, export_dataset
from factory.filters import run_filters
from factory.filters.config import load_filter_config
from factory.store import Store

REPO = Path(__file__).resolve().parent.parent

# One mark per assistant turn: 'x' a mistake, '.' an accepted move.
MARKS = {
    "run": ".xx...",  # the first fix was refused too: 2 mistakes in a row
    "late": "...x..",  # first mistake at assistant turn 4
    "both": "....xx.",  # both: the first matching rule names the note
    "plain": ".x.x..",  # two one-step corrections, early: every verified refine row looks like this
    "turn3": "..x.x.",  # first mistake at turn 3: one short of late
    "clean": "....",
}


def marked_turns(marks: str) -> str:
    turns = [{"role": "user", "content": "You are in a house.", "loss": False, "kind": "observation", "error": None}]
    for i, mark in enumerate(marks):
        error = {"type": "logic", "feedback": "No."} if mark == "x" else None
        turns.append({"role": "assistant", "content": f"Thought: t{i}\nAction: act(n={i})", "loss": error is None,
                      "kind": "thought_action", "error": error})  # fmt: skip
        turns.append(
            {"role": "user", "content": "Observation: ok", "loss": False, "kind": "observation", "error": None}
        )
    return json.dumps(turns[:-1])


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    with Store.open(tmp_path / "run") as store:
        for minute, (name, marks) in enumerate(MARKS.items()):
            corrections = sum(1 for a, b in zip(marks, marks[1:]) if a == "x" and b == ".")
            add_refine(store, name, f"Task {name}", minute, n_corrections=corrections, turns=marked_turns(marks),
                       stats=json.dumps({"corrections": corrections}))  # fmt: skip
        # A coa row whose turns hold mistakes in a row is not judged by the refine rules; a low double check is.
        add_coa(store, "coa:q1", "What is 2 + 2?", 10, stats=coa_stats(6, low_corrected=True),
                turns=marked_turns(".xxx."))  # fmt: skip
        add_coa(store, "coa:q2", "What is 3 + 3?", 11, stats=coa_stats(6), turns=marked_turns(".xxx."))
    return tmp_path / "run"


def weights(run_dir: Path, name: str) -> dict[str, tuple[float, str | None]]:
    return {tid: (w, reason) for tid, (_keep, reason, w, _split) in verdicts(run_dir, name).items()}


def test_recovery_weighs_only_hard_recoveries(run_dir, tmp_path):
    config = "filters: [{name: up, kind: upsample, weight: 3, triggers: [low_double_check, recovery]}]"
    run_filters(run_dir, write_config(tmp_path, config))
    assert weights(run_dir, "up") == {
        "refine:run": (3.0, "upsampled: 2 mistakes in a row before the fix"),
        "refine:late": (3.0, "upsampled: first mistake late, at assistant turn 4"),
        "refine:both": (3.0, "upsampled: 2 mistakes in a row before the fix"),
        "refine:plain": (1.0, None),
        "refine:turn3": (1.0, None),
        "refine:clean": (1.0, None),
        "coa:q1": (3.0, "upsampled: recovered from a low double-check score"),
        "coa:q2": (1.0, None),  # mistakes in a row in its turns, but not a refine row
    }


def test_thresholds_are_configurable_and_each_half_can_be_off(run_dir, tmp_path):
    config = "filters: [{name: up, kind: upsample, triggers: [recovery], min_mistake_run: null, late_first_mistake: 3}]"
    run_filters(run_dir, write_config(tmp_path, config))
    heavy = {tid for tid, (w, _) in weights(run_dir, "up").items() if w != 1}
    assert heavy == {"refine:late", "refine:both", "refine:turn3"}  # first mistake at turn 3 or later; runs ignored
    config = "filters: [{name: up, kind: upsample, triggers: [recovery], min_mistake_run: 2, late_first_mistake: null}]"
    run_filters(run_dir, write_config(tmp_path, config))
    assert {tid for tid, (w, _) in weights(run_dir, "up").items() if w != 1} == {"refine:run", "refine:both"}


def test_corrections_weighs_every_corrected_refine_row(run_dir, tmp_path):
    """The old trigger, for contrast: every refine row with a corrected mistake, which is every verified one."""
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: up, kind: upsample, triggers: [corrections]}]"))
    heavy = {tid for tid, (w, _) in weights(run_dir, "up").items() if w != 1}
    assert heavy == {"refine:run", "refine:late", "refine:both", "refine:plain", "refine:turn3"}


def test_recovery_needs_a_rule(tmp_path):
    config = (
        "filters: [{name: up, kind: upsample, triggers: [recovery], min_mistake_run: null, late_first_mistake: null}]"
    )
    with pytest.raises(ConfigError, match="the recovery trigger needs min_mistake_run, late_first_mistake or both"):
        load_filter_config(write_config(tmp_path, config))
    with pytest.raises(ConfigError, match="min_mistake_run"):  # one mistake is no run
        load_filter_config(write_config(tmp_path, "filters: [{name: up, kind: upsample, min_mistake_run: 1}]"))


def test_the_example_config_selects(run_dir):
    spec = next(f for f in load_filter_config(REPO / "examples" / "filters.yaml").filters if f.kind == "upsample")
    assert spec.triggers == ["low_double_check", "recovery"]
    run_filters(run_dir, REPO / "examples" / "filters.yaml")
    heavy = {tid for tid, (w, _) in weights(run_dir, spec.name).items() if w != 1}
    assert heavy == {"refine:run", "refine:late", "refine:both", "coa:q1"}


def test_the_card_states_the_rule_and_its_effect(run_dir, tmp_path):
    config = "filters: [{name: hard_recoveries, kind: upsample, triggers: [recovery]}]"
    run_filters(run_dir, write_config(tmp_path, config))
    export_dataset(run_dir, tmp_path / "out", ExportOptions(formats=["messages"], validation=0))
    card = (tmp_path / "out" / "README.md").read_text()
    assert (
        "- `hard_recoveries`: weight 2 for refine rows where 2 or more mistakes came in a row before the fix; or "
        "refine rows whose first mistake is at assistant turn 4 or later; every other row weighs 1. It reweighted "
        "3 verified rows, 3 of them kept by every filter." in card
    )


def test_a_card_without_upsampling_says_so(run_dir, tmp_path):
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: c, kind: complexity, min_tool_calls: 0}]"))
    export_dataset(run_dir, tmp_path / "out", ExportOptions(formats=["messages"], validation=0))
    assert "No upsampling: every row weighs 1." in (tmp_path / "out" / "README.md").read_text()
