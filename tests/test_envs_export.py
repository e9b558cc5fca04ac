"""The RL export writes the refine worlds of the RL split as verl rows, with their scripts (issue 29).

A real store (tests/env_rows.py): garden and archive trajectories in `rl`, roses in `sft`. The export
is read back: the rows' prompt is the text game's opening, the scripts file resets an env and is
what `factory eval --scripts` reads, and worlds the rule leaves out are counted in notes.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from env_rows import make_world_run

from factory.envs.episodes import AGENT_NAME, read_episode
from factory.envs.scripts import load_scripts
from factory.envs.text_game import first_turn
from factory.envs.world_env import EnvError, RefineWorldEnv
from factory.evaluate import load_environments
from factory.export import ExportOptions, export_dataset
from factory.export.verl import RLOptions
from factory.refine.narration import opening_observation
from factory.refine.script import Script
from factory.refine.store import save_script
from factory.store import Store, utcnow

SFT = ExportOptions(formats=["sharegpt"], validation=0)


def rl_verdict(store: Store, trajectory_id: str, script_id: str | None, split: str = "rl") -> None:
    store.upsert("trajectories", {"trajectory_id": trajectory_id, "source": "refine", "script_id": script_id,
                                  "verified": True})  # fmt: skip
    store.execute("INSERT INTO filter_verdicts (trajectory_id, filter, keep, weight, split, created_at) "
                  "VALUES (?, 'split', true, 1.0, ?, ?)", [trajectory_id, split, utcnow()])  # fmt: skip


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("export_worlds")
    result = export_dataset(make_world_run(root / "run"), root / "out", SFT, rl=RLOptions())
    folder = root / "out" / "verl" / "refine_world"
    return root, result, folder, pq.read_table(folder / "rl-00000-of-00001.parquet").to_pylist()


def test_the_rl_worlds_are_written_as_rows_for_the_agent_loop(exported):
    _, result, folder, rows = exported
    assert [row["extra_info"]["script_id"] for row in rows] == ["archive:0", "garden:0"]  # not roses: an SFT row
    names = ["rl-00000-of-00001.parquet", "scripts.jsonl", "agent_loop.yaml"]
    assert [p.as_posix() for p in result.rl.files] == [f"verl/refine_world/{name}" for name in names]
    assert result.rl.rows == 2 and result.rl.trajectories == 2 and set(result.selected) == {"sft"}
    assert any("2 refine world(s) in refine_world/" in warning for warning in result.warnings)
    assert not any("no RL row" in warning for warning in result.warnings)  # refine rows are not dropped any more
    assert (folder / "agent_loop.yaml").read_text() == (
        f"- name: {AGENT_NAME}\n  _target_: factory.envs.verl_agent.RefineWorldAgentLoop\n"
    )
    for row in rows:
        episode = read_episode(row["extra_info"])
        opening = [{"role": "user", "content": first_turn(episode.script)}]
        assert row["agent_name"] == AGENT_NAME and row["prompt"] == opening
        assert row["extra_info"]["trajectory_ids"] == [f"refine:{episode.script_id.split(':')[0]}"]
        assert row["extra_info"]["index"] == episode.script_id and episode.max_steps == 20 and episode.validation_code
        assert json.loads(row["reward_model"]["ground_truth"]) == episode.script.goal.model_dump(mode="json")


def test_the_scripts_file_resets_an_env_and_feeds_factory_eval(exported):
    root, _, folder, rows = exported
    scripts = load_scripts(folder / "scripts.jsonl")
    assert sorted(scripts) == ["archive:0", "garden:0"]
    with Store.open(root / "run", read_only=True) as store:
        stored = dict(store.query("SELECT script_id, script FROM scripts"))
    env = RefineWorldEnv(scripts=scripts)
    for row in rows:
        script_id = row["extra_info"]["script_id"]
        in_row = read_episode(row["extra_info"]).script
        assert scripts[script_id] == Script.model_validate_json(stored[script_id]) == in_row
        assert env.reset(script_id) == opening_observation(scripts[script_id])
        assert env.reset(script_id) in row["prompt"][0]["content"]
    selection = load_environments(scripts_file=folder / "scripts.jsonl")
    assert [e.env_id for e in selection.environments] == ["archive:0", "garden:0"]


def test_worlds_the_rule_leaves_out_are_counted(tmp_path):
    run = make_world_run(tmp_path / "run")
    with Store.open(run) as store:
        nogoal = Script.model_validate({**read_garden(store), "goal": {"conditions": []}, "task": "Wander about."})
        save_script(store, "nogoal:0", "nogoal", 0, nogoal, [])
        rl_verdict(store, "refine:nogoal", "nogoal:0")
        rl_verdict(store, "refine:garden#2", "garden:0", split="sft")  # garden is now in both splits
        rl_verdict(store, "import:1", None)  # no task, no script
    result = export_dataset(run, tmp_path / "out", SFT.model_copy(update={"file_type": "jsonl"}), rl=RLOptions())
    rows = [json.loads(line) for line in (tmp_path / "out/verl/refine_world/rl-00000-of-00001.jsonl").open()]
    assert [row["extra_info"]["script_id"] for row in rows] == ["archive:0"]
    notes = "\n".join(result.warnings)
    assert "1 refine world(s) also in an SFT split" in notes
    assert "1 refine world(s) the world cannot score, left out (e.g. nogoal:0: no declared goal" in notes
    assert "1 trajectories with neither a task nor a script" in notes


def test_no_rl_split_removes_old_world_rows_and_a_bad_row_is_one_line(exported, tmp_path):
    root, _, _, rows = exported
    with pytest.raises(EnvError, match=r"row garden:0: extra_info.script \(the script's JSON\) is missing"):
        read_episode({"script_id": "garden:0"})
    with pytest.raises(EnvError, match="row garden:0: extra_info.script is not a refine script"):
        read_episode({"script_id": "garden:0", "script": '{"task": "x"}'})
    run = make_world_run(tmp_path / "run")
    (tmp_path / "out" / "verl" / "refine_world").mkdir(parents=True)
    with Store.open(run) as store:
        store.execute("UPDATE filter_verdicts SET split = 'sft'")
    result = export_dataset(run, tmp_path / "out", SFT, rl=RLOptions())
    assert result.rl is None and not (tmp_path / "out" / "verl").exists()


def test_a_row_with_a_malformed_field_is_one_line_naming_it(exported):
    _, _, _, rows = exported
    row = next(r["extra_info"] for r in rows if r["extra_info"]["script_id"] == "garden:0")
    assert read_episode(row).max_steps == row["max_steps"] and read_episode({**row, "max_steps": None}).max_steps
    for bad in ("twenty", 2.5, 0, True):
        with pytest.raises(EnvError, match=rf"^row garden:0: extra_info.max_steps must be a whole number .*{bad!r}$"):
            read_episode({**row, "max_steps": bad})
    with pytest.raises(EnvError, match=r"^row garden:0: extra_info.validation_code must be true or false, not 'no'$"):
        read_episode({**row, "validation_code": "no"})


def read_garden(store: Store) -> dict:
    return json.loads(store.query("SELECT script FROM scripts WHERE script_id = 'garden:0'")[0][0])
