"""`prompts_dir` in the config: its <name>.md files override the shipped prompts for that run only."""

import hashlib

import pytest

import factory
from factory.cli import main
from factory.paths import prompts_dir
from factory.prompts import load_prompt, prompt_file, prompt_hash, prompts_override

OVERRIDE = "You are a tool designer from the override folder. Answer with one tool."


def override_folder(tmp_path):
    folder = tmp_path / "my_prompts"
    (folder / "smoke").mkdir(parents=True)
    (folder / "smoke" / "system.md").write_text(OVERRIDE + "\n")
    return folder


def sent_messages(server):
    return [entry["body"]["messages"] for entry in server.requests]


def test_a_run_sends_the_overridden_prompt_and_the_shipped_ones_it_lacks(server, tmp_path):
    folder = override_folder(tmp_path)
    config = tmp_path / "run.yaml"
    config.write_text(f"prompts_dir: {folder}\nrun_dir: {tmp_path / 'run'}\n")
    args = ["smoke", "-q", "-n", "2", "-c", str(config), "--model", "m", "--base-url", server.base_url]
    assert main(args) == 0
    messages = sent_messages(server)
    assert len(messages) == 2
    assert all(m[0] == {"role": "system", "content": OVERRIDE} for m in messages)
    shipped_user = (prompts_dir() / "smoke" / "user.md").read_text().split("{topic}")[0].strip()
    assert all(m[1]["content"].startswith(shipped_user) for m in messages)  # no override: the shipped prompt


def test_the_override_ends_with_its_run(server, tmp_path):
    folder = override_folder(tmp_path)
    shipped = (prompts_dir() / "smoke" / "system.md").read_text().strip()
    with_override = factory.FactoryConfig(run_dir=tmp_path / "a", prompts_dir=folder)
    with_override.llm.model, with_override.llm.base_url = "m", server.base_url
    with_override.smoke.n = 1
    factory.run_smoke(with_override, progress=False)
    assert load_prompt("smoke/system") == shipped  # outside the run: the shipped text, though it was cached inside
    plain = with_override.model_copy(update={"prompts_dir": None, "run_dir": tmp_path / "b"})
    factory.run_smoke(plain, progress=False)
    systems = [m[0]["content"] for m in sent_messages(server)]
    assert systems == [OVERRIDE, shipped]  # the second run asked anew with its own text: no cached reply reused


def test_the_recorded_hash_is_the_hash_of_the_text_in_use(tmp_path):
    folder = override_folder(tmp_path)
    shipped_hash = prompt_hash("smoke/system")
    with prompts_override(folder):
        assert load_prompt("smoke/system") == OVERRIDE
        assert prompt_hash("smoke/system") == hashlib.sha256(OVERRIDE.encode()).hexdigest()[:12] != shipped_hash
        assert prompt_file("smoke/topics.txt") == prompts_dir() / "smoke" / "topics.txt"  # not overridden
        assert prompt_file("smoke/system.md") == folder.resolve() / "smoke" / "system.md"
    assert prompt_hash("smoke/system") == shipped_hash


@pytest.mark.parametrize("value", ["missing_folder", "a_file.md"])
def test_a_prompts_dir_that_is_not_a_folder_is_one_line(value, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_file.md").write_text("x")
    (tmp_path / "run.yaml").write_text(f"prompts_dir: {value}\n")
    assert main(["smoke", "-c", "run.yaml", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err == (
        f"error: run.yaml: field 'prompts_dir': {value} is not a folder (a folder of <name>.md prompt overrides)"
    )


def test_the_folder_digest_changes_when_a_prompt_is_edited(tmp_path):
    from factory.prompts import prompts_dir_digest

    folder = override_folder(tmp_path)
    before = prompts_dir_digest(folder)
    assert prompts_dir_digest(folder) == before and prompts_dir_digest(None) is None
    (folder / "smoke" / "system.md").write_text(OVERRIDE + " Be brief.\n")
    assert prompts_dir_digest(folder) != before


def test_a_refine_run_plays_its_trajectory_with_the_overridden_system_prompt(server, tmp_path):
    from test_refine_scaffold import thinking_model

    folder = tmp_path / "my_prompts"
    (folder / "refine").mkdir(parents=True)
    override = "You narrate a player's thoughts, one short sentence per fixed move, from the override folder."
    (folder / "refine" / "trajectory_scaffold_system.md").write_text(override)
    server.content = thinking_model
    config = factory.FactoryConfig(run_dir=tmp_path / "run", prompts_dir=folder)
    config.llm.model, config.llm.base_url = "m", server.base_url
    config.refine = config.refine.model_copy(
        update={"count": 1, "scripts": "procedural", "with_code": False, "trajectories": "scaffolded"}
    )
    from factory.refine.batch import run_refine

    outcome = run_refine(config, progress=False)
    assert outcome.funnel["verified"] == 1
    systems = [m[0]["content"] for m in sent_messages(server)]
    assert systems == [override]  # the one scaffold call; the procedural script made none
