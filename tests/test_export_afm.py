"""AFM export: stored observation spans (NULL stays NULL, so the trainer finds the spans itself), and
exported distilled rows that AFM's own trainer keeps and masks as factory.mask.render does."""

from __future__ import annotations

import json

import datasets
import pytest

from factory.coa.afm import make_blocks, render_multiturn, render_single
from factory.export import ExportOptions, export_dataset
from factory.records import to_conversations
from factory.store import Store, utcnow

PAIRS = [("think", "Search it."), ("web_search", "capital of France"),
         ("observation", "Paris is the capital of France."), ("answer", "Paris")]  # fmt: skip


def add_coa(store: Store, trajectory_id: str, spans: str | None) -> None:
    prompt = "What is the capital of France?"
    single, turns = render_single(prompt, make_blocks(PAIRS)), render_multiturn(prompt, make_blocks(PAIRS))
    store.upsert("trajectories", {
        "trajectory_id": trajectory_id, "trace_id": trajectory_id, "task_id": trajectory_id, "source": "coa",
        "variant": "mas", "verified": True, "created_at": utcnow(), "stats": "{}",
        "turns": json.dumps([t.model_dump() for t in turns]), "conversations": json.dumps(to_conversations(turns)),
        "prompt": single.prompt, "completion": single.completion, "observation_spans": spans,
    })  # fmt: skip


@pytest.mark.parametrize("file_type", ["parquet", "jsonl"])
def test_null_observation_spans_are_exported_as_null_not_empty(tmp_path, file_type):
    single = render_single("What is the capital of France?", make_blocks(PAIRS))
    with Store.open(tmp_path / "run") as store:
        add_coa(store, "coa:stored", json.dumps([list(span) for span in single.observation_spans]))
        add_coa(store, "coa:null", None)
        add_coa(store, "coa:none", "[]")  # an empty list stored on purpose stays an empty list
    options = ExportOptions(formats=["afm"], validation=0, file_type=file_type)
    export_dataset(tmp_path / "run", tmp_path / "out", options)
    loader, pattern = ("parquet", "*.parquet") if file_type == "parquet" else ("json", "*.jsonl")
    files = [str(p) for p in (tmp_path / "out" / "afm").glob(pattern)]
    rows = {row["id"]: row for row in datasets.load_dataset(loader, data_files=files, split="train")}
    assert rows["coa:null"]["observation_spans"] is None
    assert rows["coa:none"]["observation_spans"] == []
    assert rows["coa:stored"]["observation_spans"] == [list(span) for span in single.observation_spans]


def test_the_renderer_masks_the_observation_of_a_row_exported_with_null_spans(tmp_path):
    pytest.importorskip("transformers")
    from factory.mask.render import render
    from factory.mask.tiny import tiny_tokenizer
    from train.data import read_rows
    from train.show import trained_segments

    single = render_single("What is the capital of France?", make_blocks(PAIRS))
    with Store.open(tmp_path / "run") as store:
        add_coa(store, "coa:stored", json.dumps([list(span) for span in single.observation_spans]))
        add_coa(store, "coa:null", None)
    export_dataset(tmp_path / "run", tmp_path / "out", ExportOptions(formats=["afm"], validation=0))
    rows = {row["id"]: row for _, row in read_rows(sorted(str(p) for p in (tmp_path / "out" / "afm").glob("*-of-*")))}
    tok = tiny_tokenizer()
    found, stored = render(rows["coa:null"], tok), render(rows["coa:stored"], tok)
    assert found.labels == stored.labels  # the renderer found the same spans the store held
    assert not any("Paris is the capital" in text for text in trained_segments(found, tok))


def test_exported_distilled_rows_are_kept_and_masked_alike_by_afm_s_trainer(tmp_path):
    """Store -> afm export -> AFM's trainer rule (re-implemented in test_afm_trainer_masking) == factory.mask.render."""
    pytest.importorskip("transformers")
    from afm_rows import code_rows, mas_rows
    from test_afm_trainer_masking import mismatches, qwen_like_tokenizer

    from train.data import read_rows

    distilled = {f"coa:{i}": row for i, row in enumerate(code_rows() + mas_rows())}
    with Store.open(tmp_path / "run") as store:
        for trajectory_id, row in distilled.items():
            store.upsert("trajectories", {
                "trajectory_id": trajectory_id, "trace_id": trajectory_id, "task_id": trajectory_id, "source": "coa",
                "variant": "mas", "verified": True, "created_at": utcnow(), "stats": "{}", "turns": "[]",
                "conversations": "[]", "prompt": row["instruction"], "completion": row["output"],
                "observation_spans": json.dumps(row["observation_spans"]),
            })  # fmt: skip
    export_dataset(tmp_path / "run", tmp_path / "out", ExportOptions(formats=["afm"], validation=0))
    rows = {row["id"]: row for _, row in read_rows(sorted(str(p) for p in (tmp_path / "out" / "afm").glob("*-of-*")))}
    assert set(rows) == set(distilled)
    tok = qwen_like_tokenizer()
    for trajectory_id, row in rows.items():
        assert row["output"] == distilled[trajectory_id]["output"]
        assert mismatches(row, tok) == [], trajectory_id
