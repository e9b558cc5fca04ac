"""The `simulator` export: one row per move of a kept refine trajectory, trained on the world's reply only.

Each row must be exactly the simulator's prompt for that move (factory/envs/simulator.py) plus the reply
the real world gives, and axolotl (the card's config) must train exactly the tokens factory.mask.render trains:
the reply's, and nothing of the prompt.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from consumer_harness import axolotl_samples
from consumer_rows import qwen_tokenizer
from native_rows import make_native_run
from test_export import all_rows
from test_refine_verify import GOOD
from test_refine_world import GARDEN

from factory.envs.simulator import simulator_messages
from factory.export import ExportError, ExportOptions, export_dataset
from factory.export.snippets import axolotl_dataset
from factory.export.world_model import CODE_REFUSED, NOT_REFINE, UNREADABLE_STEPS, trajectory_rows
from factory.mask.render import IGNORE, render
from factory.refine.script import Script
from factory.store import Store


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("simulator")
    result = export_dataset(
        make_native_run(root / "run"), root / "out", ExportOptions(formats=["simulator"], validation=0)
    )
    return root / "out", result


@pytest.fixture(scope="module")
def rows(exported):
    return sorted(all_rows(exported[0], "simulator"), key=lambda row: row["id"])


def test_one_row_per_move_of_each_refine_trajectory(exported, rows):
    assert [row["id"] for row in rows] == [f"refine:p{n}:{i}" for n in (0, 1) for i in range(len(GOOD))]
    assert any(NOT_REFINE in note for note in exported[1].warnings)  # the two coa rows, counted


def test_a_row_is_the_simulators_prompt_and_the_worlds_reply(rows):
    script = Script.model_validate({**GARDEN, "persona_id": "p0"})
    history = []
    for row, move in zip(rows, GOOD):  # refine:p0's moves, in order
        *asked, answer = row["messages"]
        assert [{k: m[k] for k in ("role", "content")} for m in asked] == simulator_messages(
            script, history, move["action"]
        )
        assert [m["weight"] for m in row["messages"]] == [None, None, 1] and answer["role"] == "assistant"
        said = json.loads(answer["content"])
        assert said["4_observation"] == move["observation"]  # the line the player was really told
        assert said["5_evaluation"] == move["evaluation"]  # GOOD's verdicts are the world's
        history.append({"action": move["action"], "observation": move["observation"],
                        "accepted": move["evaluation"]["error"] == "none"})  # fmt: skip
    assert (
        "the player is in kitchen, carrying watering_can"
        in json.loads(rows[2]["messages"][-1]["content"])["3_dm_thinking"]
    )


def test_render_trains_the_reply_and_nothing_of_the_prompt(rows):
    tokenizer = qwen_tokenizer()
    for row in rows:
        rendered = render(row, tokenizer)
        trained = tokenizer.decode([t for t, label in zip(rendered.input_ids, rendered.labels) if label != IGNORE])
        assert trained.removesuffix("<|im_end|>") == row["messages"][-1]["content"], row["id"]


def test_axolotl_trains_exactly_the_rendered_tokens(rows):
    tokenizer = qwen_tokenizer()
    samples = axolotl_samples(tokenizer, rows, axolotl_dataset("out/simulator"))
    for row, sample in zip(rows, samples):
        rendered = render(row, tokenizer)
        assert list(sample["input_ids"]) == rendered.input_ids, row["id"]
        trained = {i: label for i, label in enumerate(sample["labels"]) if label != IGNORE}
        assert trained == {i: label for i, label in enumerate(rendered.labels) if label != IGNORE}, row["id"]


def test_the_card_says_how_to_train_on_the_rows(exported):
    card = (exported[0] / "README.md").read_text()
    assert "**World simulator** (`simulator`" in card and "message_field_training: weight" in card


def test_a_run_without_refine_rows_is_one_line(tmp_path):
    run = make_native_run(tmp_path / "run", refine=False)
    with pytest.raises(ExportError, match="no observations to predict"):
        export_dataset(run, tmp_path / "out", ExportOptions(formats=["simulator"], validation=0))


def test_moves_refused_by_validation_code_are_left_out():
    steps = [dict(s) for s in GOOD]
    steps[1] = {**steps[1], "evaluation": {"error": "logic", "task_done": False}}  # valid by the rules: code refused
    row = {"trajectory_id": "refine:c", "source": "refine", "steps": json.dumps(steps), "task_id": None,
           "script": json.dumps({**GARDEN, "persona_id": "c"}), "script_id": "c", "weight": 1.0}  # fmt: skip
    skipped: Counter = Counter()
    written = list(trajectory_rows(row, skipped))
    assert [r["id"] for r in written] == ["refine:c:0", "refine:c:2", "refine:c:3", "refine:c:4"]
    assert skipped == {CODE_REFUSED: 1}


def test_a_damaged_trajectory_is_counted_not_raised(tmp_path):
    run = make_native_run(tmp_path / "run")
    with Store.open(run) as store:
        store.execute("UPDATE trajectories SET steps = '[{\"thought\": \"x\"}]' WHERE trajectory_id = 'refine:p0'")
    result = export_dataset(run, tmp_path / "out", ExportOptions(formats=["simulator"], validation=0))
    assert any(UNREADABLE_STEPS in note for note in result.warnings)
    assert {row["id"].rsplit(":", 1)[0] for row in all_rows(tmp_path / "out", "simulator")} == {"refine:p1"}
