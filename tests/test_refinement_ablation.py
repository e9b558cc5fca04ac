"""benchmarks/ablation_data.py: the three training variants of the same refine rows."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from ablation_data import mistake_turns, variant  # noqa: E402

ROW = {
    "id": "refine:p1",
    "conversations": [
        {"from": "human", "value": "Task: fetch the atlas.", "loss": False},
        {"from": "gpt", "value": "Action: take(item=atlas)", "loss": False},  # a mistake: not here yet
        {"from": "human", "value": "Observation: There is no atlas here.", "loss": False},
        {"from": "gpt", "value": "Action: go(room=archive)", "loss": True},
        {"from": "human", "value": "Observation: You are in the archive.", "loss": False},
        {"from": "gpt", "value": "Action: take(item=atlas)", "loss": True},
    ],
}


def losses(row):
    return [(t["from"], t["loss"]) for t in row["conversations"]]


def test_masked_keeps_trained_trains_and_removed_drops_the_mistake_with_its_observation():
    assert variant(ROW, "masked") == ROW and mistake_turns(ROW) == 1
    assert [loss for who, loss in losses(variant(ROW, "trained")) if who == "gpt"] == [True, True, True]
    removed = variant(ROW, "removed")["conversations"]
    assert [t["value"] for t in removed] == [
        "Task: fetch the atlas.",
        "Action: go(room=archive)",
        "Observation: You are in the archive.",
        "Action: take(item=atlas)",
    ]
    assert ROW["conversations"][1]["loss"] is False  # the input row is not changed
