"""The preference exports: refine step pairs (the chosen rules), stored coa pairs, splits, counts, ids, files.

The run (tests/preference_rows.py) holds refine rows played and verified in the script writer's own
example world, the consumer rows, and stored "when to act" pairs. Whether the trainers train what
factory.mask.render trains is tests/test_consumer_preference.py.
"""

from __future__ import annotations

import json
from collections import Counter
from statistics import mean

import pytest
from consumer_rows import make_consumer_run
from preference_rows import make_preference_run
from test_export import all_rows, rows_of, verdict

from factory.cli import main
from factory.export import ExportError, ExportOptions, export_dataset
from factory.export.pairs_refine import MISMATCHED, NO_CORRECTION, NO_WORLD, OFF_PLAN, ONLY_REACTION
from factory.export.pairs_stored import NOT_EXPORTED
from factory.export.preference_rows import LONG_SIDE, ONE_SIDED, sharegpt_prompt
from factory.store import Store

MALFORMED = "stored pair: prompt, chosen or rejected is not JSON"
STORED_SKIPS = {NOT_EXPORTED: 1, LONG_SIDE: 1, ONE_SIDED: 1, MALFORMED: 1}
STORED_KEPT = {"coa:odd#when_to_act", "task:capital#when_not_to_act"}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return make_preference_run(tmp_path_factory.mktemp("preference") / "run")


def export(run_dir, out, *formats, **options):
    result = export_dataset(run_dir, out, ExportOptions(formats=list(formats), **{"validation": 0, **options}))
    return result, {fmt.name: fmt for fmt in result.formats}


@pytest.fixture(scope="module")
def corrected(run_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("corrected")
    return out, export(run_dir, out, "preference", "ranking", "kto", file_type="jsonl")[1]


def stored_turns(run_dir, trajectory_id: str) -> list[dict]:
    with Store.open(run_dir, read_only=True) as store:
        return json.loads(store.query("SELECT turns FROM trajectories WHERE trajectory_id = ?", [trajectory_id])[0][0])


def by_id(out, fmt: str = "preference", file_type: str = "jsonl") -> dict[str, dict]:
    return {row["pair_id"]: row for row in all_rows(out, fmt, file_type)}


def test_a_step_pair_is_the_context_the_mistake_and_the_grounded_correction(run_dir, corrected):
    turns = stored_turns(run_dir, "refine:tomatoes")
    row = by_id(corrected[0])["refine:tomatoes@7"]
    assert row["prompt"] == [{"role": t["role"], "content": t["content"]} for t in turns[:7]]
    assert row["rejected"] == [{"role": "assistant", "content": turns[7]["content"]}] and turns[7]["error"]
    # "Five litres is more than the can holds." answers the refusal the prompt does not hold: it goes.
    assert row["chosen"] == [
        {
            "role": "assistant",
            "content": "Thought: Two litres should be enough for these plants.\nAction: water(litres=2)",
        }
    ]
    assert turns[9]["content"].startswith("Thought: Five litres is more than the can holds.")
    assert not any("does not hold that much" in m["content"] for m in row["prompt"])
    assert (row["kind"], row["source"], row["trajectory_id"], row["script_id"]) == (
        "refine_step", "refine", "refine:tomatoes", "tomatoes:0")  # fmt: skip


def test_earlier_mistakes_and_their_refusals_stay_in_the_context(run_dir, corrected):
    turns, rows = stored_turns(run_dir, "refine:detour"), by_id(corrected[0])
    second = rows["refine:detour@3"]
    assert [m["content"] for m in second["prompt"]] == [t["content"] for t in turns[:3]]
    assert "Observation: You can only water the plants in the garden" in second["prompt"][2]["content"]
    assert second["rejected"][0]["content"].endswith("Action: take(item=hose)")
    # Both mistakes share the correction the trajectory took; "Right, the plants are outside." reacts: it goes.
    expected = "Thought: I will walk out to the garden where the tomatoes grow.\nAction: go(place=garden)"
    assert rows["refine:detour@1"]["chosen"][0]["content"] == second["chosen"][0]["content"] == expected


def test_every_left_out_pair_is_counted_by_reason(corrected):
    out, formats = corrected
    skipped = formats["preference"].settings["skipped"]
    # tomatoes@3 ("I forgot ... Let me go there."), detour@7 ("still ... for it"), p1's two ("again"): react only.
    assert skipped == Counter({ONLY_REACTION: 4, NO_CORRECTION: 1, **STORED_SKIPS})
    assert set(by_id(out)) == {"refine:tomatoes@7", "refine:detour@1", "refine:detour@3", "refine:p0@1", *STORED_KEPT}
    assert formats["ranking"].settings["skipped"] == skipped
    assert formats["kto"].settings["skipped"] == Counter({f"no desirable row: {ONLY_REACTION}": 4,
                                                          f"no desirable row: {NO_CORRECTION}": 1, NOT_EXPORTED: 1,
                                                          LONG_SIDE: 1, MALFORMED: 1})  # fmt: skip


def test_the_export_notes_what_it_left_out(run_dir, tmp_path):
    result, _ = export(run_dir, tmp_path, "preference")
    note = next(w for w in result.warnings if w.startswith("preference:"))
    assert note.startswith("preference: 9 row(s) left out (4 the correction's thought only reacts")


def test_plan_keeps_a_pair_only_where_the_correction_is_a_shortest_plan_move(run_dir, tmp_path):
    _, formats = export(run_dir, tmp_path, "preference", pair_chosen="plan")
    rows = by_id(tmp_path, file_type="parquet")
    # Watering from the garden with the can is the plan's one move; the garden before the can is a detour.
    assert set(rows) == {"refine:tomatoes@7", *STORED_KEPT}
    assert rows["refine:tomatoes@7"]["chosen"][0]["content"].endswith("Action: water(litres=2)")
    skipped = formats["preference"].settings["skipped"]
    assert skipped == Counter({OFF_PLAN: 2, NO_WORLD: 3, ONLY_REACTION: 2, NO_CORRECTION: 1, **STORED_SKIPS})
    assert formats["preference"].settings["pair_chosen"] == "plan"
    # The card says what plan does: the chosen side is still the correction taken, fewer pairs keep one.
    card = (tmp_path / "README.md").read_text()
    assert "the correction the trajectory took, kept only where it is a shortest-plan move" in card


def test_the_ranking_rows_and_their_dataset_info(corrected):
    out, _ = corrected
    rows = by_id(out, "ranking")
    assert set(rows) == set(by_id(out))
    tomatoes = rows["refine:tomatoes@7"]
    assert [t["from"] for t in tomatoes["conversations"]] == ["human", "gpt", "human", "gpt", "human", "gpt", "human"]
    assert tomatoes["chosen"]["from"] == tomatoes["rejected"]["from"] == "gpt"
    info = json.loads((out / "ranking" / "dataset_info.json").read_text())
    assert info == {"factory_ranking_train": {
        "file_name": "train-00000-of-00001.jsonl", "formatting": "sharegpt", "ranking": True,
        "columns": {"messages": "conversations", "chosen": "chosen", "rejected": "rejected"},
        "tags": {"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt",
                 "system_tag": "system", "observation_tag": "observation"}}}  # fmt: skip


def test_a_ranking_prompt_alternates_and_ends_with_a_user_turn():
    system, ask = {"role": "system", "content": "s"}, {"role": "user", "content": "q"}
    act, seen = {"role": "assistant", "content": "a"}, {"role": "tool", "content": "o"}
    assert [t["from"] for t in sharegpt_prompt([system, ask, act, seen])] == ["system", "human", "gpt", "observation"]
    assert sharegpt_prompt([ask, act]) is None and sharegpt_prompt([ask, seen]) is None  # never merged
    assert sharegpt_prompt([ask, system]) is None  # a system message only first


def test_pairs_follow_their_trajectory_split_and_task_group(run_dir, tmp_path):
    with Store.open(run_dir) as store:
        for trajectory_id in ("coa:odd", "refine:tomatoes"):
            verdict(store, trajectory_id, "split", True, split="validation")
        verdict(store, "coa:odd2", "split", True, split="train")
    try:
        export(run_dir, tmp_path, "kto", validation=0.5)
    finally:
        with Store.open(run_dir) as store:
            store.execute("DELETE FROM filter_verdicts WHERE filter = 'split'")
    splits = {row["id"]: split for split, rows in rows_of(tmp_path, "kto").items() for row in rows}
    assert splits["coa:odd#when_to_act/chosen"] == splits["refine:tomatoes@7/rejected"] == "validation"
    assert splits["coa:odd2#when_to_act/rejected"] == "train"
    detour = {split for pid, split in splits.items() if pid.startswith("refine:detour@")}
    assert len(detour) == 1 and "task:capital#when_not_to_act/chosen" in splits  # a task-only pair: its hash


def test_a_dropped_trajectory_takes_its_pairs_with_it(run_dir, tmp_path):
    with Store.open(run_dir) as store:
        verdict(store, "refine:detour", "complexity", False, "too short")
    try:
        _, formats = export(run_dir, tmp_path, "preference")
    finally:
        with Store.open(run_dir) as store:
            store.execute("DELETE FROM filter_verdicts WHERE filter = 'complexity'")
    assert not any(pid.startswith("refine:detour") for pid in by_id(tmp_path, file_type="parquet"))


def test_pair_ids_are_stable_across_exports_and_file_types(run_dir, corrected, tmp_path):
    export(run_dir, tmp_path / "a", "preference", "kto", validation=0.5)
    export(run_dir, tmp_path / "b", "preference", "kto", validation=0.5)
    first, again = all_rows(tmp_path / "a", "preference"), all_rows(tmp_path / "b", "preference")
    assert [r["pair_id"] for r in first] == [r["pair_id"] for r in again]
    assert {r["pair_id"]: r for r in first} == by_id(corrected[0])  # parquet and jsonl hold the same rows
    assert {r["id"] for r in all_rows(tmp_path / "a", "kto")} == {
        r["id"] for r in all_rows(corrected[0], "kto", "jsonl")
    }


def test_an_export_without_pairs_is_a_one_line_error(tmp_path, capsys):
    run = make_consumer_run(tmp_path / "run", refine=False)
    with pytest.raises(ExportError, match="no preference pairs: refine mistakes with their correction"):
        export_dataset(run, tmp_path / "out", ExportOptions(formats=["ranking"]))
    assert main(["export", str(run), "--format", "preference", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {run}: no preference pairs")
    assert not (tmp_path / "out" / "preference").exists()


def test_a_row_whose_steps_do_not_match_its_turns_gives_no_pair(tmp_path):
    """Step k is assistant turn k (refine/output.py): a row with a step too few is damaged, which of the two is
    wrong cannot be told, so it gives no pair under either rule and is counted."""
    run = make_preference_run(tmp_path / "run", stored=False)
    with Store.open(run) as store:
        (steps,) = store.query("SELECT steps FROM trajectories WHERE trajectory_id = 'refine:tomatoes'")[0]
        store.execute("UPDATE trajectories SET steps = ? WHERE trajectory_id = 'refine:tomatoes'",
                      [json.dumps(json.loads(steps)[:-1])])  # fmt: skip
    for rule in ("corrected", "plan"):
        _, formats = export(run, tmp_path / rule, "kto", pair_chosen=rule, file_type="jsonl")
        assert formats["kto"].settings["skipped"][MISMATCHED] == 1
        ids = {row["pair_id"] for row in all_rows(tmp_path / rule, "kto", "jsonl")}
        assert ids and not any(pair_id.startswith("refine:tomatoes") for pair_id in ids)


def test_the_side_words_are_measured_on_the_written_rows(corrected):
    """settings["side_words"]: mean words of the chosen and rejected sides each format wrote, and the share of
    pairs whose chosen side is shorter; kto counts its completions by label and pairs its two rows."""
    out, formats = corrected
    words = lambda side: len(side[0]["content"].split())  # noqa: E731
    pairs = [(words(r["chosen"]), words(r["rejected"])) for r in all_rows(out, "preference", "jsonl")]
    shorter = round(sum(c < r for c, r in pairs) / len(pairs), 2)
    expected = {"chosen_mean": round(mean(c for c, _ in pairs), 1), "rejected_mean": round(mean(r for _, r in pairs), 1),
                "chosen_shorter": shorter, "pairs": len(pairs)}  # fmt: skip
    assert formats["preference"].settings["side_words"] == formats["ranking"].settings["side_words"] == expected
    kto = all_rows(out, "kto", "jsonl")
    by_label = {label: [words(r["completion"]) for r in kto if r["label"] is label] for label in (True, False)}
    assert formats["kto"].settings["side_words"] == {
        "chosen_mean": round(mean(by_label[True]), 1), "rejected_mean": round(mean(by_label[False]), 1),
        "chosen_shorter": shorter, "pairs": len(pairs)}  # fmt: skip
    assert len(by_label[False]) > len(pairs)  # the one-sided rows count for their side, not for the share


def test_an_unreadable_refine_row_is_counted_not_raised(tmp_path):
    run = make_preference_run(tmp_path / "run", stored=False)
    steps_without_actions = json.dumps([{}] * 5)  # as many steps as the row's assistant turns, none readable
    with Store.open(run) as store:
        store.execute("UPDATE trajectories SET steps = '[{broken' WHERE trajectory_id = 'refine:detour'")
        store.execute(
            "UPDATE trajectories SET steps = ? WHERE trajectory_id = 'refine:tomatoes'", [steps_without_actions]
        )
    for rule in ("corrected", "plan"):
        _, formats = export(run, tmp_path / rule, "kto", pair_chosen=rule)
        assert formats["kto"].settings["skipped"]["refine row: turns, steps or script unreadable"] == 1 + (
            rule == "plan")  # fmt: skip


def test_the_card_says_how_to_load_each_format(corrected):
    card = (corrected[0] / "README.md").read_text()
    assert "DPOTrainer(model=MODEL" in card and "KTOTrainer(model=MODEL" in card
    assert "stage: dpo" in card and "dataset: factory_ranking_train" in card and "pref_ftx" in card
    figures = corrected[1]["preference"].settings["side_words"]
    stated = f"chosen sides average {figures['chosen_mean']} words, rejected sides {figures['rejected_mean']}"
    assert card.count(stated) == 2 and "desirable sides average" in card  # preference and ranking; kto
    assert "`ld_alpha=0.5`" in card and "`pref_loss: simpo`" in card and "no length-normalised loss" in card


def test_the_published_ranking_config_names_the_shards_it_holds(run_dir, tmp_path):
    from factory.export.publish import publish

    publish(run_dir, to=tmp_path / "hub", formats=["ranking"], options=ExportOptions(validation=0))
    folder = next(path.parent for path in (tmp_path / "hub").rglob("dataset_info.json"))
    named = {entry["file_name"] for entry in json.loads((folder / "dataset_info.json").read_text()).values()}
    assert named and named == {path.name for path in folder.glob("*.parquet")}
