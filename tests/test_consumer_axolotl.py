"""axolotl trains exactly the tokens factory.mask.render says train, on the `messages` export.

The `datasets:` entry the card gives (chat_template, per-message training flag read from `weight`) is
checked against axolotl's own config schema and run through axolotl's own chat_template strategy with a
real tokenizer; its labels are compared with factory.mask.render's token by token.
"""

from __future__ import annotations

import pytest
from consumer_harness import axolotl_samples
from consumer_rows import make_consumer_run, qwen_tokenizer
from test_export import all_rows

from factory.export import ExportOptions, export_dataset
from factory.export.snippets import axolotl_dataset
from factory.mask.render import IGNORE, render


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    root = tmp_path_factory.mktemp("axolotl")
    export_dataset(make_consumer_run(root / "run"), root / "out", ExportOptions(formats=["messages"], validation=0))
    return all_rows(root / "out", "messages")


def trained(labels: list[int]) -> dict[int, int]:
    return {i: label for i, label in enumerate(labels) if label != IGNORE}


def test_axolotl_trains_exactly_the_rendered_tokens(rows):
    samples = axolotl_samples(qwen_tokenizer(), rows, axolotl_dataset("out/messages"))
    tokenizer = qwen_tokenizer()
    for row, sample in zip(rows, samples):
        rendered = render(row, tokenizer)
        assert list(sample["input_ids"]) == rendered.input_ids, row["id"]
        assert trained(sample["labels"]) == trained(rendered.labels), f"{row['id']}: axolotl's labels differ"


def test_without_the_training_field_axolotl_trains_the_mistakes(rows):
    entry = {key: value for key, value in axolotl_dataset("out/messages").items() if key != "message_field_training"}
    samples = axolotl_samples(qwen_tokenizer(), rows, entry)
    tokenizer = qwen_tokenizer()
    differing = [
        row["id"]
        for row, sample in zip(rows, samples)
        if trained(sample["labels"]) != trained(render(row, tokenizer).labels)
    ]
    assert set(differing) == {"refine:p0", "refine:p1", "refine:p2"}
