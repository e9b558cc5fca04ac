"""World-model rows (AutoCoA's SFT stage 3, issue 29): `--observations train` exports train exactly
factory.mask.render(..., train_on_observations=True)'s tokens in each trainer's own data code.

The runs are the consumer tests' (tests/consumer_rows.py: refine rows with mistakes, their refusals and a
blank turn, coa rows with a tool observation; tests/native_rows.py: the same as native tool calls). The
trainers: axolotl's chat_template strategy on `messages` and `openai` (the card's entry), TRL's dataset
preparation and collator on `trl` (text and native), stock LLaMA-Factory on the `afm` rows (what AFM's fork
does with `ignore_observation: false`). Negative controls: axolotl without the observation flags, and verl's
multi-turn SFT dataset, which trains assistant messages only (why the card leaves verl out of stage 3).
"""

from __future__ import annotations

import datasets
import pytest
from consumer_harness import axolotl_samples, llamafactory_samples
from consumer_rows import make_consumer_run, qwen_tokenizer
from native_rows import make_native_run, qwen_tools_tokenizer
from test_consumer_axolotl import trained
from test_export import all_rows

from factory.export import ExportError, ExportOptions, export_dataset
from factory.export.snippets import afm_fork_config, axolotl_dataset, trl_config, trl_data_files
from factory.mask.render import IGNORE, render

REFUSAL = "Observation: There is no iron key here."  # the world's answer to refine:p0's mistake


def world(row: dict, tokenizer, **switches):
    return render(row, tokenizer, train_on_observations=True, **switches)


def export(root, run, tokenizer, formats: list[str], **options):
    tokenizer.save_pretrained(root / "tokenizer")
    options = ExportOptions(formats=formats, validation=0, observations="train", tokenizer=str(root / "tokenizer"),
                            **options)  # fmt: skip
    return export_dataset(run, root / "out", options)


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    root = tmp_path_factory.mktemp("world_text")
    return export(root, make_consumer_run(root / "run"), qwen_tokenizer(), ["messages", "trl", "afm"])


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    root = tmp_path_factory.mktemp("world_native")
    return export(root, make_native_run(root / "run"), qwen_tools_tokenizer(), ["openai", "trl"], tool_calls="native")


def rows(result, fmt: str) -> list[dict]:
    return all_rows(result.out, fmt)


def decoded(tokenizer, labels: list[int]) -> str:
    return tokenizer.decode([label for label in labels if label != IGNORE])


# --- the rows ------------------------------------------------------------------------------------------


def test_messages_flag_each_observation_that_answers_an_action(text):
    by_id = {row["id"]: [(m["role"], m["weight"]) for m in row["messages"]] for row in rows(text, "messages")}
    assert by_id["refine:p0"] == [("user", None), ("assistant", 0)] + [("user", 1), ("assistant", 1)] * 3
    assert by_id["coa:odd"] == [("user", None), ("assistant", 1), ("tool", 1), ("assistant", 1)]


def test_the_refusal_trains_and_the_mistaken_action_never_does(text):
    tokenizer = qwen_tokenizer()
    (row,) = [r for r in rows(text, "messages") if r["id"] == "refine:p0"]
    taught = decoded(tokenizer, world(row, tokenizer).labels)
    assert REFUSAL + "<|im_end|>" in taught and "take(item=iron key)" not in taught
    assert "Open the oak chest" not in taught  # the task (the opening user turn) is never an observation
    assert "Observation" not in decoded(tokenizer, render(row, tokenizer).labels)  # stage 2: masked


# --- each trainer's own data code ----------------------------------------------------------------------


def check_axolotl(tokenizer, exported: list[dict], entry: dict, fed: list[dict] | None = None) -> None:
    """axolotl's labels on `fed` (the exported rows unless given) against the world-model render of `exported`."""
    samples = axolotl_samples(tokenizer, fed or exported, entry)
    for row, sample in zip(exported, samples, strict=True):
        rendered = world(row, tokenizer)
        assert list(sample["input_ids"]) == rendered.input_ids, row["id"]
        assert trained(sample["labels"]) == trained(rendered.labels), f"{row['id']}: axolotl's labels differ"


def test_axolotl_trains_exactly_the_world_model_tokens_of_messages(text):
    check_axolotl(qwen_tokenizer(), rows(text, "messages"), axolotl_dataset("out/messages"))


def test_axolotl_trains_exactly_the_world_model_tokens_of_native_rows(native):
    exported = list(
        datasets.load_dataset("parquet", data_files=str(native.out / "openai" / "train-*.parquet"))["train"]
    )
    assert all(m["weight"] == 1 for row in exported for m in row["messages"] if m["role"] == "tool")
    check_axolotl(qwen_tools_tokenizer(), exported, axolotl_dataset("out/openai"))


def test_without_the_flags_axolotl_leaves_the_refine_observations_out(text):
    """The control: the same rows with the user observations unflagged differ from the world-model render."""
    exported = rows(text, "messages")
    unflagged = [{**row, "messages": [{**m, "weight": None} if m["role"] == "user" else m for m in row["messages"]]}
                 for row in exported]  # fmt: skip
    with pytest.raises(AssertionError, match="refine:p0: axolotl's labels differ"):
        check_axolotl(qwen_tokenizer(), exported, axolotl_dataset("out/messages"), fed=unflagged)


@pytest.mark.parametrize("kind", ["text", "native"])
def test_trl_trains_exactly_the_world_model_tokens(text, native, kind, tmp_path):
    from test_consumer_trl import trl_labels

    result, tokenizer, source = (text, qwen_tokenizer(), "messages") if kind == "text" else \
        (native, qwen_tools_tokenizer(), "openai")  # fmt: skip
    settings = next(f.settings for f in result.formats if f.name == "trl")
    builder, files = trl_data_files(settings, str(result.out / "trl"), result.options.file_type)
    dataset = datasets.load_dataset(builder, data_files=files)["train"]
    labels, input_ids = trl_labels(dataset, tmp_path, tokenizer, **trl_config({"max_length": None}))
    expected = {tuple(r.input_ids): r.labels for r in (world(row, tokenizer) for row in rows(result, source))}
    assert sorted(map(tuple, input_ids)) == sorted(expected), "TRL dropped, cut or merged a row"
    for ids, got in zip(input_ids, labels):
        assert got == expected[tuple(ids)], "TRL's labels differ from the world-model render"
    taught = "".join(decoded(tokenizer, row) for row in labels)
    assert ("There is no iron key here." if kind == "text" else "Something happens.") in taught


def test_llamafactory_on_the_afm_rows_trains_the_whole_output(text, tmp_path, monkeypatch):
    """AFM's fork with `ignore_observation: false` is stock LLaMA-Factory's supervised path: run that."""
    settings = {**next(f.settings for f in text.formats if f.name == "afm"), "observations": "train"}
    config = afm_fork_config(settings, str(text.out / "afm"))
    assert config.pop("ignore_observation") is False and "ignore_observation_token" not in config
    samples = llamafactory_samples(monkeypatch, tmp_path, qwen_tokenizer(), **config)
    exported = rows(text, "afm")
    assert len(samples) == len(exported) == 2
    tokenizer = qwen_tokenizer()
    for row, sample in zip(exported, samples):
        rendered = world(row, tokenizer, train_turn_suffix=True)  # LLaMA-Factory trains the newline after <|im_end|>
        assert (list(sample["input_ids"]), list(sample["labels"])) == (rendered.input_ids, rendered.labels), row["id"]
        assert "<observation>" in decoded(tokenizer, sample["labels"])


def test_verl_trains_assistant_messages_only_so_the_card_leaves_it_out(native, monkeypatch):
    from test_consumer_verl_native import verl_datasets

    _, native_dataset, config = verl_datasets.__wrapped__(monkeypatch)
    files = [str(native.out / path) for path in next(f for f in native.formats if f.name == "openai").files["train"]]
    tokenizer = qwen_tools_tokenizer()
    item = native_dataset(parquet_files=files, tokenizer=tokenizer, config=config)[0]
    ids, mask = item["input_ids"].tolist(), item["loss_mask"].tolist()
    assert "Something happens." in decoded(tokenizer, world(rows(native, "openai")[0], tokenizer).labels)
    assert "Something happens." not in decoded(tokenizer, [t if m else IGNORE for t, m in zip(ids, mask)])
    assert "verl's multi-turn SFT dataset train assistant messages only" in (native.out / "README.md").read_text()


# --- refusals and the card -------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["sharegpt", "llamafactory"])
def test_llamafactory_formats_refuse_in_one_line(fmt, tmp_path):
    run = make_consumer_run(tmp_path / "run")
    with pytest.raises(ExportError) as refused:
        export_dataset(run, tmp_path / "out", ExportOptions(formats=[fmt], observations="train"))
    message = str(refused.value)
    assert "\n" not in message and f"{fmt} cannot train observations" in message
    assert "use messages, openai, trl, afm" in message and not (tmp_path / "out" / fmt).exists()


def test_all_formats_skip_the_llamafactory_ones_with_a_note(tmp_path):
    result = export_dataset(make_consumer_run(tmp_path / "run"), tmp_path / "out", ExportOptions(observations="train"))
    assert [f.name for f in result.formats] == ["messages", "afm", "openai"]  # trl: no tokenizer named
    skipped = [w.split(",")[0] for w in result.warnings if "cannot train observations" in w]
    assert skipped == ["sharegpt: skipped", "llamafactory: skipped"]


def test_the_card_says_which_mask_the_export_used(text, tmp_path):
    card = (text.out / "README.md").read_text()
    flagged = [(row["messages"][i - 1], m) for row in rows(text, "messages") for i, m in enumerate(row["messages"])
               if m["role"] != "assistant" and m["weight"] == 1]  # fmt: skip
    refusals = sum(before["weight"] == 0 and before["content"].strip() != "" for before, _ in flagged)
    assert f"answers an action is in the loss ({len(flagged)} in the kept rows)" in card
    assert f"mistaken action included ({refusals} of them;" in card and refusals == 3
    assert "- world-model" in card.split("---")[1] and "ignore_observation: false" in card
    masked = export_dataset(text.run_dir, tmp_path / "mask", ExportOptions(formats=["messages"], validation=0))
    plain = masked.card.read_text()
    assert (
        "**Observations are masked** (`--observations mask`" in plain and "- world-model" not in plain.split("---")[1]
    )


def test_a_world_model_export_claims_nothing_its_formats_cannot_carry(tmp_path):
    run = make_consumer_run(tmp_path / "run")
    result = export_dataset(run, tmp_path / "out2", ExportOptions(formats=["kto"], observations="train"))
    assert any("none of kto carries observations" in w for w in result.warnings)
    card = (tmp_path / "out2" / "README.md").read_text()
    assert "- world-model" not in card.split("---")[1] and "**Observations are masked**" in card


def test_a_skipped_format_takes_an_older_exports_rows_with_it(tmp_path):
    run = make_consumer_run(tmp_path / "run")
    export_dataset(run, tmp_path / "out", ExportOptions(formats=["sharegpt", "messages"]))
    assert (tmp_path / "out" / "sharegpt").exists()
    export_dataset(run, tmp_path / "out", ExportOptions(formats=["sharegpt", "messages"], observations="train"))
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == ["messages"]
