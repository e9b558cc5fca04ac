"""axolotl trains exactly factory.mask.render's tokens on the `openai` export's native tool-call rows (issue 27).

axolotl's chat_template strategy (schema-checked entry, the card's `message_field_training: weight`) reads
the rows as written: `tools` as JSON text, `arguments` as JSON text (it parses them), Arrow's absent keys
as None (it drops them); on a tokenizer with Qwen2.5's tool-calling template its labels must be render's.
"""

from __future__ import annotations

import datasets
import pytest
from consumer_harness import axolotl_samples
from native_rows import make_native_run, qwen_tools_tokenizer
from test_consumer_axolotl import trained

from factory.export import ExportOptions, export_dataset
from factory.export.snippets import axolotl_dataset
from factory.mask.render import IGNORE, render


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    root = tmp_path_factory.mktemp("axolotl_native")
    export_dataset(make_native_run(root / "run"), root / "out", ExportOptions(formats=["openai"], validation=0))
    return list(datasets.load_dataset("parquet", data_files=str(root / "out" / "openai" / "train-*.parquet"))["train"])


def test_axolotl_trains_exactly_the_rendered_tokens_of_native_rows(rows):
    tokenizer = qwen_tools_tokenizer()
    samples = axolotl_samples(tokenizer, rows, axolotl_dataset("out/openai"))
    for row, sample in zip(rows, samples, strict=True):
        rendered = render(row, tokenizer)
        assert list(sample["input_ids"]) == rendered.input_ids, row["id"]
        assert trained(sample["labels"]) == trained(rendered.labels), f"{row['id']}: axolotl's labels differ"
    text = "".join(tokenizer.decode([x for x in s["labels"] if x != IGNORE]) for s in samples)
    assert '"arguments": {"item": "watering_can"}' in text and '"attic"' not in text
