"""LLaMA-Factory trains exactly the tokens factory.mask.render says train, on the `llamafactory` export.

The export's dataset_info.json and the config keys the card gives are fed to LLaMA-Factory's own data
path (dataset loader, sharegpt converter, supervised processor, `qwen` template) with a real tokenizer;
its labels are compared with factory.mask.render's token by token (with `train_turn_suffix`, since LLaMA-Factory's
templates put the newline after <|im_end|> in the response).
"""

from __future__ import annotations

import pytest
from consumer_harness import llamafactory_samples
from consumer_rows import make_consumer_run, qwen_tokenizer
from test_export import all_rows

from factory.export import ExportOptions, export_dataset
from factory.export.snippets import llamafactory_config
from factory.mask.render import IGNORE, render


def export(tmp_path, **kinds):
    """An export with the tokenizer named, so the card's config carries the measured cutoff_len."""
    run = make_consumer_run(tmp_path / "run", **kinds)
    qwen_tokenizer().save_pretrained(tmp_path / "tokenizer")
    options = ExportOptions(formats=["sharegpt", "llamafactory"], validation=0, tokenizer=str(tmp_path / "tokenizer"))
    result = export_dataset(run, tmp_path / "out", options)
    return tmp_path / "out", next(f for f in result.formats if f.name == "llamafactory").settings


def consumer_samples(monkeypatch, tmp_path, out, settings, template="qwen", **override):
    """LLaMA-Factory run with the data keys of the card's config (snippets.llamafactory_config)."""
    config = {**llamafactory_config(settings, str(out / "llamafactory")), "template": template, **override}
    return llamafactory_samples(monkeypatch, tmp_path, qwen_tokenizer(), **config)


def trained(labels: list[int]) -> dict[int, int]:
    return {i: label for i, label in enumerate(labels) if label != IGNORE}


def check_rows_against_render(samples: list[dict], rows: list[dict]) -> dict[str, int]:
    """Each sample is a prefix of one row's render; per row, the samples' labels together are render's labels."""
    tokenizer = qwen_tokenizer()
    expected = {row["id"]: render(row, tokenizer, train_turn_suffix=True) for row in rows}
    got: dict[str, dict[int, int]] = {row_id: {} for row_id in expected}
    counts = dict.fromkeys(expected, 0)
    for sample in samples:
        ids = list(sample["input_ids"])
        owners = [row_id for row_id, r in expected.items() if r.input_ids[: len(ids)] == ids]
        assert len(owners) == 1, "a LLaMA-Factory sample is not a prefix of exactly one rendered row"
        labels = trained(sample["labels"])
        assert not set(labels) & set(got[owners[0]]), "two samples of one row train the same token"
        got[owners[0]].update(labels)
        counts[owners[0]] += 1
    for row_id, rendered in expected.items():
        assert got[row_id] == trained(rendered.labels), f"{row_id}: LLaMA-Factory's labels differ from render's"
    return counts


@pytest.mark.parametrize("template", ["qwen", None])  # None: LLaMA-Factory parses the tokenizer's own template
def test_refine_mistakes_never_train_in_llamafactory(tmp_path, monkeypatch, template):
    out, settings = export(tmp_path)
    assert settings["mode"] == "last"  # refine rows keep mistakes in context: one sample per trained turn
    samples = consumer_samples(monkeypatch, tmp_path, out, settings, template)
    counts = check_rows_against_render(samples, all_rows(out, "sharegpt"))
    assert counts == {"refine:p0": 3, "refine:p1": 2, "refine:p2": 1, "coa:odd": 2, "coa:odd2": 2}
    assert len(samples) == sum(counts.values()) == len(all_rows(out, "llamafactory")), "LLaMA-Factory dropped a row"
    check_samples_render_alike(samples, all_rows(out, "llamafactory"))


def check_samples_render_alike(samples: list[dict], rows: list[dict]) -> None:
    """Each sample's own `loss` keys (which LLaMA-Factory ignores) render to LLaMA-Factory's labels for it,
    so train/ or any reader that honours them trains a sample as LLaMA-Factory does."""
    tokenizer = qwen_tokenizer()
    for sample, row in zip(samples, rows, strict=True):
        rendered = render(row, tokenizer, train_turn_suffix=True)
        assert (rendered.input_ids, rendered.labels) == (list(sample["input_ids"]), list(sample["labels"])), row["id"]


def test_a_coa_only_export_trains_each_row_once(tmp_path, monkeypatch):
    out, settings = export(tmp_path, refine=False)
    assert settings["mode"] == "full"  # every gpt turn trains: one sample per row, mask_history off
    samples = consumer_samples(monkeypatch, tmp_path, out, settings)
    assert len(samples) == 2
    check_rows_against_render(samples, all_rows(out, "sharegpt"))
    check_samples_render_alike(samples, all_rows(out, "llamafactory"))


def test_the_measured_cutoff_len_keeps_every_sample_whole(tmp_path, monkeypatch):
    """The config's cutoff_len is measured; one below the longest sample and LLaMA-Factory cuts it."""
    out, settings = export(tmp_path)
    longest = max(len(render(row, qwen_tokenizer(), train_turn_suffix=True)) for row in all_rows(out, "llamafactory"))
    assert settings["longest_tokens"] == longest and settings["cutoff_len"] >= longest
    short = consumer_samples(monkeypatch, tmp_path, out, settings, cutoff_len=longest - 40)
    with pytest.raises(AssertionError):
        check_samples_render_alike(short, all_rows(out, "llamafactory"))


def test_without_the_export_llamafactory_trains_the_mistakes(tmp_path, monkeypatch):
    """The plain sharegpt export read by LLaMA-Factory (its `loss` key ignored): the check catches it."""
    out, _ = export(tmp_path)
    (out / "sharegpt" / "dataset_info.json").write_text(
        '{"plain": {"file_name": "train-00000-of-00001.parquet", "formatting": "sharegpt", '
        '"columns": {"messages": "conversations"}}}'
    )
    samples = llamafactory_samples(
        monkeypatch, tmp_path, qwen_tokenizer(), dataset_dir=str(out / "sharegpt"), dataset="plain", template="qwen"
    )
    with pytest.raises(AssertionError, match="labels differ from render"):
        check_rows_against_render(samples, all_rows(out, "sharegpt"))
