"""TRL's DPO and KTO trainers and LLaMA-Factory's DPO data path train exactly the sides factory.mask.render trains.

Each pair's prompt + chosen and prompt + rejected are rendered by factory.mask.render with only that side in the
loss; the trainer's own data preparation (TRL: its tokenization and collator; LLaMA-Factory: dataset_info.json
-> loader -> ranking converter -> pairwise processor, with the config keys the card gives) must produce the
same token ids and train the same positions, for refine step pairs and stored coa pairs (one with a system
prompt) alike: on hand-made rows, on a strong model's recorded trajectories, and on the pairs `factory pairs`
itself stores. The negative control: a side of two messages, which the export leaves out, makes TRL train an
observation and a role header that render never trains.
"""

from __future__ import annotations

import json

import datasets
import pytest
from consumer_harness import import_llamafactory
from consumer_rows import qwen_tokenizer
from loopback_server import ok
from pair_traces import GARBAGE, READING, RECALL, coa_run
from preference_harness import (
    collated,
    dpo_loss,
    dpo_prepared,
    kto_prepared,
    llamafactory_pairs,
    rendered_side,
    trained_positions,
)
from preference_rows import make_preference_run, replayed_run

from factory.coa.pairs import PairsConfig, make_pairs
from factory.export import ExportOptions, export_dataset
from factory.export.preference_consumers import LENGTH_AWARE, ranking_config
from factory.run_config import FactoryConfig

pytest.importorskip("trl")


def export_all(run, out):
    options = ExportOptions(formats=["preference", "ranking", "kto"], validation=0)
    result = export_dataset(run, out, options)
    return out, {fmt.name: fmt.settings for fmt in result.formats}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("preference_consumers")
    return export_all(make_preference_run(root / "run"), root / "out")


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """A strong model's trajectories: prompts past TRL's default max_length of 1024 tokens among them."""
    root = tmp_path_factory.mktemp("preference_replayed")
    return export_all(replayed_run(root), root / "out")


@pytest.fixture
def staged(tmp_path, server, fast_config):
    """The "when to act" stage's own pairs (`factory pairs` over tests/pair_traces.py's coa run, the recall
    answers from the loopback server), exported."""
    coa_run(tmp_path / "run")
    for marker, reply in RECALL.items():
        server.route(marker, ok(reply))
    server.route(READING, *[ok(GARBAGE)] * 3)
    make_pairs(FactoryConfig(run_dir=tmp_path / "run", llm=fast_config()), PairsConfig())
    return export_all(tmp_path / "run", tmp_path / "out")


@pytest.fixture(params=["made", "replayed", "staged"])
def either(request):
    return request.getfixturevalue({"made": "exported", "replayed": "replayed", "staged": "staged"}[request.param])


def loaded(out, fmt: str) -> datasets.Dataset:
    return datasets.load_dataset("parquet", data_files=str(out / fmt / "train-*.parquet"))["train"]


def test_trl_dpo_trains_each_side_as_render_does(either, tmp_path):
    tokenizer = qwen_tokenizer()
    rows = loaded(either[0], "preference")
    trainer, prepared = dpo_prepared(rows, tokenizer, tmp_path)
    assert len(prepared) == len(rows), "TRL dropped a pair"
    sequences = collated(trainer, prepared, ("prompt_ids", "chosen_ids", "rejected_ids"))
    chosen, rejected = sequences[: len(prepared)], sequences[len(prepared) :]
    for row, got_chosen, got_rejected in zip(prepared, chosen, rejected):
        assert got_chosen == rendered_side(row["prompt"], row["chosen"][0], tokenizer), row["pair_id"]
        assert got_rejected == rendered_side(row["prompt"], row["rejected"][0], tokenizer), row["pair_id"]


def test_trl_kto_trains_each_completion_as_render_does(either, tmp_path):
    tokenizer = qwen_tokenizer()
    rows = loaded(either[0], "kto")
    trainer, prepared = kto_prepared(rows, tokenizer, tmp_path)
    assert len(prepared) == len(rows), "TRL dropped a row"
    assert sum(row["label"] for row in prepared) and not all(row["label"] for row in prepared)
    sequences = collated(trainer, prepared, ("prompt_ids", "completion_ids", "label"))
    for row, got in zip(prepared, sequences, strict=True):
        assert got == rendered_side(row["prompt"], row["completion"][0], tokenizer), row["id"]


def test_llamafactory_pairwise_processor_trains_each_side_as_render_does(either, monkeypatch, tmp_path):
    out, settings = either
    config = ranking_config(settings["ranking"], str(out / "ranking"))
    data_keys = {k: config[k] for k in ("dataset_dir", "dataset", "template", "cutoff_len")}
    samples = llamafactory_pairs(monkeypatch, tmp_path, qwen_tokenizer(), **data_keys)
    rows = list(loaded(out, "ranking"))
    assert len(samples) == len(rows), "LLaMA-Factory dropped a pair"
    tokenizer = qwen_tokenizer()
    for row, sample in zip(rows, samples):
        for side in ("chosen", "rejected"):
            expected = rendered_side(row["conversations"], row[side], tokenizer, sharegpt=True)
            got = (list(sample[f"{side}_input_ids"]), trained_positions(x != -100 for x in sample[f"{side}_labels"]))
            assert got == expected, (row["pair_id"], side)


def test_the_made_run_holds_every_kind_of_pair(exported):
    ids = {row["pair_id"] for row in loaded(exported[0], "preference")}
    assert ids >= {"refine:tomatoes@7", "refine:detour@3", "coa:odd#when_to_act", "task:capital#when_not_to_act"}


def test_the_replayed_prompts_pass_trls_default_length(replayed):
    """Why the card's configs set max_length=None: with TRL's default 1024 these pairs would be cut or dropped."""
    tokenizer = qwen_tokenizer()
    longest = max(
        len(rendered_side(r["prompt"], r["chosen"][0], tokenizer)[0]) for r in loaded(replayed[0], "preference")
    )
    assert longest > 1024


def test_a_system_prompt_reaches_both_trainers_as_the_system_turn(exported, tmp_path):
    """LLaMA-Factory takes a first `system` turn as its system prompt; TRL's template writes the message."""
    rows = {row["pair_id"]: row for row in loaded(exported[0], "ranking")}
    capital = rows["task:capital#when_not_to_act"]["conversations"]
    assert [turn["from"] for turn in capital] == ["system", "human"]
    ids, _ = rendered_side(capital, rows["task:capital#when_not_to_act"]["chosen"], qwen_tokenizer(), sharegpt=True)
    text = qwen_tokenizer().decode(ids)
    assert text.startswith("<|im_start|>system\nAnswer from what you know") and "You are Qwen" not in text


def test_a_side_of_several_messages_would_train_what_render_masks(exported, tmp_path):
    """Why the export leaves such a side out: TRL trains every token after the prompt."""
    tokenizer = qwen_tokenizer()
    row = next(iter(loaded(exported[0], "preference")))
    tool = {"role": "tool", "content": "Observation: the world answers"}
    longer = {**row, "chosen": [row["chosen"][0], tool, row["chosen"][0]]}
    _, prepared = dpo_prepared(datasets.Dataset.from_list([longer]), tokenizer, tmp_path)
    trained = tokenizer.decode(prepared[0]["chosen_ids"])
    assert "the world answers" in trained and trained.count("<|im_start|>") == 2  # an observation, two headers


def test_the_kto_export_holds_one_row_per_side(exported):
    rows = list(loaded(exported[0], "kto"))
    by_pair = {}
    for row in rows:
        by_pair.setdefault(row["pair_id"], []).append(row["label"])
    assert by_pair["refine:tomatoes@7"] == [True, False]
    assert by_pair["refine:tomatoes@3"] == [False]  # its correction's thought only reacts: the mistake alone
    assert by_pair["coa:odd2#when_to_act"] == [False]  # a stored KTO-only row
    assert by_pair["coa:odd#two_turns"] == [False]  # its two-message chosen side is left out


def test_the_card_config_names_the_datasets_dataset_info_holds(exported):
    out, settings = exported
    config = ranking_config(settings["ranking"], str(out / "ranking"))
    assert config["dataset"] == "factory_ranking_train" and settings["ranking"]["pair_chosen"] == "corrected"
    assert config["dataset"] in json.loads((out / "ranking" / "dataset_info.json").read_text())


def test_trl_applies_each_length_setting_the_card_names(exported, tmp_path):
    """The card's length-aware DPOConfig settings exist in TRL and change its loss on the same batch (sides of
    unequal length): the trainer applies them rather than ignoring them."""
    rows = loaded(exported[0], "preference")
    plain = dpo_loss(rows, qwen_tokenizer(), tmp_path)
    for settings, _ in LENGTH_AWARE["preference"]:
        assert dpo_loss(rows, qwen_tokenizer(), tmp_path, **settings) != pytest.approx(plain, abs=1e-6), settings


def test_llamafactory_reads_each_length_setting_the_card_names(monkeypatch):
    """The card's length-aware LLaMA-Factory keys are arguments of its DPO stage, with values among its choices
    (its command-line parser refuses an unknown name or choice)."""
    import_llamafactory(monkeypatch)
    from llamafactory.hparams.finetuning_args import FinetuningArguments
    from transformers import HfArgumentParser

    parser = HfArgumentParser(FinetuningArguments)
    for settings, _ in LENGTH_AWARE["ranking"]:
        argv = ["--stage", "dpo", *(part for key, value in settings.items() for part in (f"--{key}", str(value)))]
        (parsed,) = parser.parse_args_into_dataclasses(argv)
        assert {key: getattr(parsed, key) for key in settings} == settings
    with pytest.raises(SystemExit):
        parser.parse_args_into_dataclasses(["--stage", "dpo", "--pref_loss", "sigmoid_norm"])  # TRL's name only


def test_a_replayed_correction_looking_back_on_the_mistake_has_no_chosen_side(replayed):
    """ "Three is closest to what I meant to give" answers the refused four bolts the prompt lacks: the recorded
    pair keeps its mistake as an undesirable row only."""
    assert "refine:p0041@5" not in {row["pair_id"] for row in loaded(replayed[0], "preference")}
    assert [row["label"] for row in loaded(replayed[0], "kto") if row["pair_id"] == "refine:p0041@5"] == [False]
