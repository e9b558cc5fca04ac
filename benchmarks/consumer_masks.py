"""Do the masks survive into the trainers? Share of rows each trainer keeps and masks as train.render does.

    python benchmarks/consumer_masks.py                 # the consumer tests' refine + coa rows
    python benchmarks/consumer_masks.py --run outputs/refine

For every consumer, "before" is the export a user had before the consumer
formats (sharegpt for LLaMA-Factory, messages for TRL and axolotl) read with
the trainer's defaults, "after" the consumer's export and the card's config.
Each trainer's own data code makes the labels (tests/consumer_harness.py);
a row counts as masked correctly when the trainer's trained tokens, over all
its samples, are exactly render's. Figures go to
benchmarks/results/consumer_masks.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pytest
from results_file import report

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

from consumer_harness import axolotl_samples, llamafactory_samples  # noqa: E402
from consumer_rows import make_consumer_run, qwen_tokenizer  # noqa: E402

from factory.export import ExportOptions, export_dataset  # noqa: E402
from factory.export.snippets import axolotl_dataset, llamafactory_config  # noqa: E402
from train.render import IGNORE, render  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "consumer_masks.json"


def trained(labels) -> dict[int, int]:
    return {i: int(x) for i, x in enumerate(labels) if x != IGNORE}


def agreement(samples: list[tuple[list[int], list[int]]], rows: list[dict], suffix: bool) -> dict:
    """Rows kept (some sample is a prefix of the row's render) and masked correctly (labels equal render's)."""
    tokenizer = qwen_tokenizer()
    expected = {row["id"]: render(row, tokenizer, train_turn_suffix=suffix) for row in rows}
    got: dict[str, dict[int, int]] = {}
    for ids, labels in samples:
        owner = next((rid for rid, r in expected.items() if r.input_ids[: len(ids)] == list(ids)), None)
        if owner is not None:
            got.setdefault(owner, {}).update(trained(labels))
    correct = sum(1 for rid, r in expected.items() if got.get(rid) == trained(r.labels))
    return {
        "rows": len(rows),
        "kept": round(len(got) / len(rows), 3),
        "masked_correctly": round(correct / len(rows), 3),
    }


def rows_of(out: Path, fmt: str) -> list[dict]:
    import datasets

    return list(datasets.load_dataset("parquet", data_files=str(out / fmt / "train-*.parquet"))["train"])


def llamafactory(out: Path, settings: dict, work: Path) -> dict:
    sharegpt = rows_of(out, "sharegpt")
    (out / "sharegpt" / "dataset_info.json").write_text(
        '{"plain": {"file_name": "train-00000-of-00001.parquet", "formatting": "sharegpt", '
        '"columns": {"messages": "conversations"}}}'
    )
    with pytest.MonkeyPatch.context() as patch:
        before = llamafactory_samples(
            patch, work, qwen_tokenizer(), dataset_dir=str(out / "sharegpt"), dataset="plain", template="qwen"
        )
        config = {
            k: v
            for k, v in llamafactory_config(settings, str(out / "llamafactory")).items()
            if k in ("dataset_dir", "dataset", "template", "mask_history")
        }
        after = llamafactory_samples(patch, work, qwen_tokenizer(), **config)
    pairs = lambda samples: [(s["input_ids"], s["labels"]) for s in samples]  # noqa: E731
    return {"before": agreement(pairs(before), sharegpt, True), "after": agreement(pairs(after), sharegpt, True)}


def trl(out: Path, work: Path) -> dict:
    import datasets
    import trl as trl_package

    from train.tiny import tiny_model

    def labels_of(dataset):
        tokenizer = qwen_tokenizer()
        tokenizer.pad_token = tokenizer.eos_token
        args = trl_package.SFTConfig(
            output_dir=str(work / "sft"), report_to=[], max_length=None, use_cpu=True, bf16=False
        )
        trainer = trl_package.SFTTrainer(
            model=tiny_model(tokenizer), args=args, train_dataset=dataset, processing_class=tokenizer
        )
        prepared = [{c: r[c] for c in ("input_ids", "labels") if c in r} for r in trainer.train_dataset]
        batch = trainer.data_collator(prepared)
        return [(r["input_ids"], batch["labels"][i, : len(r["input_ids"])].tolist()) for i, r in enumerate(prepared)]

    messages = rows_of(out, "messages")
    before = labels_of(datasets.Dataset.from_list([{"messages": r["messages"]} for r in messages]))
    after = labels_of(datasets.load_dataset("parquet", data_files=str(out / "trl" / "train-*.parquet"))["train"])
    return {"before": agreement(before, messages, False), "after": agreement(after, messages, False)}


def axolotl(out: Path) -> dict:
    messages = rows_of(out, "messages")
    entry = axolotl_dataset(str(out / "messages"))
    plain = {k: v for k, v in entry.items() if k != "message_field_training"}
    result = {}
    for name, dataset in (("before", plain), ("after", entry)):
        samples = axolotl_samples(qwen_tokenizer(), messages, dataset)
        result[name] = agreement([(s["input_ids"], s["labels"]) for s in samples], messages, False)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="a run folder (default: the consumer tests' rows in a fresh store)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="consumer-masks-"))
    run = args.run or make_consumer_run(work / "run")
    tokenizer_dir = work / "tokenizer"
    qwen_tokenizer().save_pretrained(tokenizer_dir)
    options = ExportOptions(
        formats=["sharegpt", "messages", "llamafactory", "trl"], validation=0, tokenizer=str(tokenizer_dir)
    )
    result = export_dataset(run, work / "out", options)
    settings = next(f.settings for f in result.formats if f.name == "llamafactory")
    figures = {
        "llamafactory": llamafactory(work / "out", settings, work),
        "trl": trl(work / "out", work),
        "axolotl": axolotl(work / "out"),
    }
    report(RESULTS, "default rows" if not args.run else f"run {Path(args.run).name}", figures)


if __name__ == "__main__":
    main()
