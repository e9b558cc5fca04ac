"""Do the masks survive into the trainers? Share of rows each trainer keeps and masks as factory.mask.render does.

    python benchmarks/consumer_masks.py                 # the consumer tests' refine + coa rows
    python benchmarks/consumer_masks.py --run outputs/refine
    python benchmarks/consumer_masks.py --native        # native tool calls (issue 27), Qwen2.5's tool template

For every consumer, "before" is the export a user had before the consumer
formats (sharegpt for LLaMA-Factory, messages for TRL and axolotl) read with
the trainer's defaults, "after" the consumer's export and the card's config.
Each trainer's own data code makes the labels (tests/consumer_harness.py);
a row counts as masked correctly when the trainer's trained tokens, over all
its samples, are exactly render's. Figures go to
benchmarks/results/consumer_masks.json.

With --native the rows are tests/native_rows.py's (2 refine, 2 coa) in their native tool-call form, on a
tokenizer with Qwen2.5's tool-calling template, and render's labels are those of the `openai` row. Before:
each trainer on what it would read without the consumer forms (TRL tokenizing the `openai` rows itself;
LLaMA-Factory on the native samples without the card's `mask_history: true`; axolotl on the `openai` rows
without `message_field_training`); after: the native `trl` and `llamafactory` exports and the card's
axolotl entry.
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
from factory.mask.render import IGNORE, render  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "consumer_masks.json"


def trained(labels) -> dict[int, int]:
    return {i: int(x) for i, x in enumerate(labels) if x != IGNORE}


def agreement(samples: list[tuple[list[int], list[int]]], rows: list[dict], suffix: bool, tokenizer=None) -> dict:
    """Rows kept (some sample is a prefix of the row's render) and masked correctly (labels equal render's)."""
    tokenizer = tokenizer or qwen_tokenizer()
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


def trl_labels(dataset, work: Path, make_tokenizer=qwen_tokenizer) -> list[tuple[list[int], list[int]]]:
    import trl as trl_package

    from factory.mask.tiny import tiny_model

    tokenizer = make_tokenizer()
    tokenizer.pad_token = tokenizer.eos_token
    args = trl_package.SFTConfig(output_dir=str(work / "sft"), report_to=[], max_length=None, use_cpu=True, bf16=False)
    trainer = trl_package.SFTTrainer(
        model=tiny_model(tokenizer), args=args, train_dataset=dataset, processing_class=tokenizer
    )
    prepared = [{c: r[c] for c in ("input_ids", "labels") if c in r} for r in trainer.train_dataset]
    batch = trainer.data_collator(prepared)
    return [(r["input_ids"], batch["labels"][i, : len(r["input_ids"])].tolist()) for i, r in enumerate(prepared)]


def trl(out: Path, work: Path) -> dict:
    import datasets

    messages = rows_of(out, "messages")
    before = trl_labels(datasets.Dataset.from_list([{"messages": r["messages"]} for r in messages]), work)
    after = trl_labels(datasets.load_dataset("parquet", data_files=str(out / "trl" / "train-*.parquet"))["train"], work)
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


def native(work: Path) -> dict:
    """The native tool-call forms (see the module docstring): before/after per trainer."""
    import datasets
    from native_rows import make_native_run, qwen_tools_tokenizer

    tokenizer_dir = work / "tools-tokenizer"
    qwen_tools_tokenizer().save_pretrained(tokenizer_dir)
    options = ExportOptions(formats=["openai", "llamafactory", "trl"], validation=0, tokenizer=str(tokenizer_dir),
                            tool_calls="native")  # fmt: skip
    result = export_dataset(make_native_run(work / "native-run"), work / "native", options)
    out, tok = work / "native", qwen_tools_tokenizer()
    rows = rows_of(out, "openai")
    pairs = lambda samples: [(s["input_ids"], s["labels"]) for s in samples]  # noqa: E731
    settings = next(f.settings for f in result.formats if f.name == "llamafactory")
    config = {k: v for k, v in llamafactory_config(settings, str(out / "llamafactory")).items()
              if k in ("dataset_dir", "dataset", "template", "mask_history")}  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        lf_before = llamafactory_samples(patch, work, qwen_tools_tokenizer(), **{**config, "mask_history": False})
        lf_after = llamafactory_samples(patch, work, qwen_tools_tokenizer(), **config)
    conversational = datasets.Dataset.from_list([{"messages": r["messages"], "tools": r["tools"]} for r in rows])
    trl_before = trl_labels(conversational, work, qwen_tools_tokenizer)
    trl_after = trl_labels(datasets.load_dataset("parquet", data_files=str(out / "trl" / "train-*.parquet"))["train"],
                           work, qwen_tools_tokenizer)  # fmt: skip
    entry = axolotl_dataset(str(out / "openai"))
    plain = {k: v for k, v in entry.items() if k != "message_field_training"}
    return {
        "verl": verl_native(out, rows, tok),
        "llamafactory": {"before": agreement(pairs(lf_before), rows, True, tok),
                         "after": agreement(pairs(lf_after), rows, True, tok)},
        "trl": {"before": agreement(trl_before, rows, False, tok), "after": agreement(trl_after, rows, False, tok)},
        "axolotl": {name: agreement(pairs(axolotl_samples(qwen_tools_tokenizer(), rows, e)), rows, False, tok)
                    for name, e in (("before", plain), ("after", entry))},
    }  # fmt: skip


def verl_native(out: Path, rows: list[dict], tok) -> dict:
    """verl's MultiTurnSFTDataset: stock (it refuses JSON-text tools: nothing kept) and the card's custom_cls."""
    import types

    stand_in = types.ModuleType("verl.models.transformers.qwen2_vl")  # transformers 5.24 lacks what it imports
    stand_in.get_rope_index = lambda *args, **kwargs: None
    sys.modules.setdefault("verl.models.transformers.qwen2_vl", stand_in)
    from omegaconf import OmegaConf
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

    from factory.export.verl_sft import NativeSFTDataset

    config = OmegaConf.create({"max_length": 1 << 16, "truncation": "error", "pad_mode": "no_padding"})
    files = [str(path) for path in sorted((out / "openai").glob("train-*.parquet"))]
    result = {}
    for name, cls in (("before", MultiTurnSFTDataset), ("after", NativeSFTDataset)):
        samples = []
        for i in range(len(rows)):
            try:
                item = cls(parquet_files=list(files), tokenizer=tok, config=config)[i]
            except (ValueError, AssertionError):
                continue
            ids = item["input_ids"].tolist()
            samples.append((ids, [t if m else IGNORE for t, m in zip(ids, item["loss_mask"].tolist())]))
        result[name] = agreement(samples, rows, True, tok)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="a run folder (default: the consumer tests' rows in a fresh store)")
    parser.add_argument("--native", action="store_true", help="the native tool-call forms (tests/native_rows.py)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="consumer-masks-"))
    if args.native:
        report(RESULTS, "native tool calls (tests/native_rows.py)", native(work))
        return
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
