"""factory eval: held-out environments from a real store, the DM loop, players, the report.

Scripted players are real HTTP clients (factory.llm) of the loopback server; the
HF player is a tiny random model from factory.mask.tiny, which fails the tasks: its
report must still be well-formed and its counts consistent.
"""

import argparse
import copy
import json

import pytest
from loopback_server import Action, ok
from test_refine_world import GARDEN  # kitchen -> garden with the watering can

from factory.envs.text_game import parse_action
from factory.errors import FactoryError
from factory.evaluate import (
    LLMPlayer,
    NoEnvironmentsError,
    evaluate,
    format_results,
    llm_config,
    load_environments,
    write_results,
)  # fmt: skip
from factory.evaluate.command import add_eval_parser
from factory.evaluate.metrics import MistakeTracker
from factory.refine.script import Script
from factory.refine.store import save_script
from factory.store import Store, utcnow

# The validation code adds a rule the declarative ones lack (carry one item at a time); it
# passes the refine script checks, whose probes start with empty hands.
LIBRARY = {
    "environment": {
        "locations": [
            {"name": "hall", "description": "A quiet hall.", "items": ["key"]},
            {"name": "archive", "description": "Dusty shelves.", "items": ["atlas"]},
        ],
        "player": {"location": "hall", "inventory": []},
    },
    "task": "Fetch the atlas from the archive.",
    "actions": [
        {"name": "go", "description": "Walk to a room.",
         "parameters": [{"name": "room", "valid_values": ["hall", "archive"]}],
         "effects": [{"kind": "move_to", "param": "room"}]},
        {"name": "take", "description": "Pick up one item where you stand.",
         "parameters": [{"name": "item", "valid_values": ["key", "atlas"]}],
         "preconditions": [{"kind": "param_at_location", "value": "item"}],
         "effects": [{"kind": "take", "param": "item"}],
         "validation_code": "def validate(params, state):\n"
                            "    if state['inventory']:\n"
                            "        return [False, 'Your hands are full: you can carry one thing at a time.']\n"
                            "    return params['item'] in state['items_here']"},
    ],
    "goal": {"conditions": [{"kind": "player_at", "value": "archive"}, {"kind": "has_item", "value": "atlas"}]},
}  # fmt: skip

GARDEN_PLAN = [
    "Thought: I need the can.\nAction: take(item=watering_can)",
    "Thought: Now outside.\nAction: go(place=garden)",
    "Thought: Two litres.\nAction: water(litres=2)",
]
LIBRARY_PLAN = ["Thought: To the archive.\nAction: go(room=archive)", "Thought: There it is.\nAction: take(item=atlas)"]


def variant(base: dict, task: str) -> Script:
    return Script.model_validate({**copy.deepcopy(base), "task": task})


@pytest.fixture
def run_dir(tmp_path):
    """A refine run store: 2 held-out scripts, 1 in the store's training split, 1 exported, 1 without goal."""
    folder = tmp_path / "run"
    store = Store.open(folder)
    no_goal = {**copy.deepcopy(GARDEN), "goal": {"conditions": []}, "task": "Wander about the kitchen."}
    scripts = {
        "garden:0": Script.model_validate(GARDEN),
        "library:0": Script.model_validate(LIBRARY),
        "trained:0": variant(GARDEN, "Water the roses in the garden."),
        "exported:0": variant(GARDEN, "Water the beans in the garden."),
        "nogoal:0": Script.model_validate(no_goal),
    }
    for script_id, script in scripts.items():
        save_script(store, script_id, script_id.split(":")[0], 0, script, [])
    save_script(store, "broken:0", "broken", 0, Script.model_validate(GARDEN), ["goal unreachable"])  # not verified
    for persona, split in (("trained", "sft"), ("garden", "validation")):
        store.upsert(
            "trajectories",
            {"trajectory_id": f"refine:{persona}", "source": "refine", "script_id": f"{persona}:0", "verified": True},
        )
        store.execute(
            "INSERT INTO filter_verdicts (trajectory_id, filter, keep, weight, split, created_at) "
            "VALUES (?, 'split', true, 1.0, ?, ?)",
            [f"refine:{persona}", split, utcnow()],
        )
    store.close()
    return folder


@pytest.fixture
def train_data(tmp_path):
    """An exported sharegpt training file whose rows carry script_id metadata."""
    path = tmp_path / "train.jsonl"
    rows = [{"id": "refine:exported", "conversations": [{"from": "human", "value": "hi", "loss": False}],
             "source": "refine", "task_id": None, "script_id": "exported:0", "weight": 1.0},
            {"id": "coa:1", "conversations": [], "source": "coa", "task_id": "t1", "script_id": None,
             "weight": 1.0}]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_parse_action_reads_the_refine_syntax():
    assert parse_action("Thought: go\nAction: go(place=garden)").params == {"place": "garden"}
    assert parse_action('Action: note(text="a, b", n=2)').params == {"text": "a, b", "n": "2"}
    assert parse_action("Action: look()").name == "look"
    assert parse_action("Action: go(garden)") is None  # positional: not the refine syntax
    assert parse_action("I would walk to the garden.") is None


def test_repeated_mistakes_are_counted_once_per_streak():
    tracker = MistakeTracker(loop_k=2)
    for attempt in ["a", "a", "a", "b", "a", "a"]:
        tracker.see(("s",), attempt, valid=False)
    assert (tracker.loops, tracker.longest_streak, tracker.revisits) == (2, 3, 4)


def test_held_out_excludes_training_scripts_and_says_why(run_dir, train_data):
    selection = load_environments(run_dir, exclude_train=[train_data])
    assert [e.env_id for e in selection.environments] == ["garden:0", "library:0"]  # garden is in 'validation'
    reasons = {x.env_id: x.reason for x in selection.excluded}
    assert set(reasons) == {"trained:0", "exported:0", "nogoal:0"}
    assert "training split 'sft'" in reasons["trained:0"] and str(train_data) in reasons["exported:0"]
    assert "no declared goal" in reasons["nogoal:0"]
    assert [e.plan_length for e in selection.environments] == [3, 2]


def test_a_published_folder_excludes_only_its_training_split(run_dir, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "published" / "data" / "sharegpt"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"id": ["a"], "script_id": ["library:0"]}), folder / "train-00000.parquet")
    pq.write_table(pa.table({"id": ["b"], "script_id": ["garden:0"]}), folder / "validation-00000.parquet")
    registry = tmp_path / "published" / "data" / "llamafactory" / "dataset_info.json"  # what factory export writes
    registry.parent.mkdir()
    registry.write_text('{"factory_train": {"file_name": "train-00000.parquet", "formatting": "sharegpt"}}')
    selection = load_environments(run_dir, exclude_train=[tmp_path / "published"])
    assert [e.env_id for e in selection.environments] == ["exported:0", "garden:0"]  # library is in train-*
    mixed = tmp_path / "mixed.parquet"  # the exporter's rows name their split
    pq.write_table(pa.table({"script_id": ["library:0", "garden:0"], "split": ["train", "validation"]}), mixed)
    assert [e.env_id for e in load_environments(run_dir, exclude_train=[mixed]).environments] == [
        "exported:0",
        "garden:0",
    ]


def test_a_saved_dataset_dict_excludes_its_train_split(run_dir, tmp_path):
    import datasets

    splits = {"train": ["library:0"], "validation": ["garden:0"]}
    saved = datasets.DatasetDict({k: datasets.Dataset.from_dict({"id": v, "script_id": v}) for k, v in splits.items()})
    saved.save_to_disk(str(tmp_path / "saved"))
    selection = load_environments(run_dir, exclude_train=[tmp_path / "saved"])
    assert [e.env_id for e in selection.environments] == ["exported:0", "garden:0"]


def test_nothing_left_or_bad_training_data_is_one_line(run_dir, train_data, tmp_path):
    extra = tmp_path / "more.jsonl"
    extra.write_text(json.dumps({"id": "x", "script_id": "garden:0"}) + "\n" + json.dumps({"script_id": "library:0"}))
    with pytest.raises(NoEnvironmentsError, match="no held-out environments left: all 5 script"):
        load_environments(run_dir, exclude_train=[train_data, extra])
    no_ids = tmp_path / "plain.jsonl"
    no_ids.write_text(json.dumps({"id": "x", "conversations": []}) + "\n")
    with pytest.raises(FactoryError, match="no script_id column"):
        load_environments(run_dir, exclude_train=[no_ids])


def test_a_scripts_file_gives_environments_and_names_a_bad_row(tmp_path):
    good = tmp_path / "scripts.jsonl"
    rows = [
        {"script_id": "g", "script": GARDEN},
        {**LIBRARY, "script_id": "lib"},
        {"script_id": "x", "verified": False, **GARDEN},
    ]
    good.write_text("".join(json.dumps(r) + "\n" for r in rows))
    selection = load_environments(scripts_file=good)
    assert [e.env_id for e in selection.environments] == ["g", "lib"]
    assert selection.excluded[0].env_id == "x"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"script_id": "g", "script": {**GARDEN, "actions": []}}) + "\n")
    with pytest.raises(FactoryError, match=r"bad.jsonl:1: field 'actions'"):
        load_environments(scripts_file=bad)


def test_a_known_good_plan_succeeds_through_the_sandbox(run_dir, server, fast_config):
    server.route(GARDEN["task"], *map(ok, GARDEN_PLAN))
    server.route(LIBRARY["task"], *map(ok, LIBRARY_PLAN))
    selection = load_environments(run_dir, exclude_train=[])
    selection.environments = [e for e in selection.environments if e.env_id in ("garden:0", "library:0")]
    report = evaluate(selection, LLMPlayer(fast_config(temperature=0)), max_steps=6)
    overall = report.overall
    assert (overall["success_rate"], overall["progress_rate"], overall["steps"]) == (1.0, 1.0, 5)
    assert overall["format_errors"] == overall["invalid_actions"] == overall["loops"] == 0
    assert [e.status for e in report.episodes] == ["success", "success"]
    garden = [r["body"]["messages"] for r in server.requests if GARDEN["task"] in r["body"]["messages"][0]["content"]]
    assert [m["role"] for m in garden[1]] == ["user", "assistant", "user"]
    said = garden[1][2]["content"]  # the world DM's prose, as the training rows read: what the move changed
    assert said.startswith("Observation: ") and "watering can" in said
    assert "worked." not in said and "watering_can" not in said and "You are in the kitchen" not in said
    assert "Action: <action name>(<parameter>=<value>, ...)" in garden[0][0]["content"]  # the training prompt


def test_validation_code_judges_in_the_sandbox(server, fast_config):
    from factory.evaluate import Environment
    from factory.refine.validation_code import SandboxCodeChecker

    greedy = [
        ok("Action: take(item=key)"),
        ok("Action: go(room=archive)\nThought: and then", finish_reason="length"),
        ok("Action: take(item=atlas)"),
    ]  # a reply cut at max_tokens is still a turn
    server.route(LIBRARY["task"], *greedy * 2)
    env = Environment("library", Script.model_validate(LIBRARY), 2)
    assert SandboxCodeChecker().script_problems(env.script) == []  # a script the refine path would verify
    strict = evaluate([env], LLMPlayer(fast_config()), max_steps=3).episodes[0]
    assert strict.invalid_by_type == {"logic": 1}
    assert strict.transcript[-1].reason == "Your hands are full: you can carry one thing at a time."  # the code's words
    assert not strict.success and strict.progress == pytest.approx(0.5)  # one step from the goal of two
    lenient = evaluate([env], LLMPlayer(fast_config()), max_steps=3, validation_code=False).episodes[0]
    assert lenient.success and lenient.steps == 3


def test_a_repeated_bad_action_is_a_loop_and_format_errors_count(run_dir, train_data, server, fast_config):
    bad = ok("Thought: The attic!\nAction: go(place=attic)")
    server.route(GARDEN["task"], bad, bad, bad)  # then the server's default JSON: not an action
    server.route(LIBRARY["task"], Action(status=400))
    selection = load_environments(run_dir, exclude_train=[train_data])
    report = evaluate(selection, LLMPlayer(fast_config(max_retries=0)), max_steps=5, loop_k=3)
    garden, library = report.episodes
    assert (garden.status, garden.steps, garden.format_errors) == ("step_limit", 5, 2)
    assert garden.invalid_by_type == {"parameter": 3}
    assert garden.loop_detected and garden.loops == 1 and garden.longest_mistake_streak == 3
    assert garden.revisits == 3 and garden.progress == 0.0 and garden.final_distance == 3
    assert library.status == "player_error" and "bad_request" in library.error and library.steps == 0
    overall = report.overall
    assert overall["loop_rate"] == 0.5 and overall["player_errors"] == 1 and overall["format_error_rate"] == 0.4
    table = format_results(report)
    assert "garden:0" in table and "overall" in table and "excluded 3" in table


def test_the_command_writes_results_under_the_run(run_dir, train_data, server, capsys):
    server.route(GARDEN["task"], *map(ok, GARDEN_PLAN))
    args = _parse(run_dir, "--model", "loopback", "--base-url", server.base_url, "--exclude-train", str(train_data),
                  "--max-steps", "4", "--no-validation-code")  # fmt: skip
    assert args.func(args) == 0
    (path,) = (run_dir / "eval").glob("*.json")
    saved = json.loads(path.read_text())
    assert saved["settings"]["max_steps"] == 4 and saved["settings"]["validation_code"] is False
    assert {x["env_id"] for x in saved["selection"]["excluded"]} == {"trained:0", "exported:0", "nogoal:0"}
    assert saved["environments"][0]["success"] and saved["environments"][0]["transcript"][1]["outcome"] == "ok"
    assert str(path) in capsys.readouterr().out
    store = Store.open(run_dir, read_only=True)
    assert store.query("SELECT count(*) FROM llm_calls WHERE stage = 'eval'")[0][0] == len(server.requests)
    assert store.query("SELECT command, status FROM runs") == [("eval", "done")]
    store.close()


def _parse(*argv):
    parser = argparse.ArgumentParser()
    add_eval_parser(parser.add_subparsers())
    return parser.parse_args(["eval", *map(str, argv)])


def _consistent(episode, max_steps):
    outcomes = [s.outcome for s in episode.transcript]
    assert episode.steps == len(outcomes) <= max_steps
    assert episode.format_errors == outcomes.count("format")
    assert episode.invalid_actions == sum(o not in ("ok", "format") for o in outcomes)
    assert 0.0 <= episode.progress <= 1.0 and episode.success == (episode.status == "success")


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    pytest.importorskip("torch")
    from factory.mask.tiny import tiny_model, tiny_tokenizer

    folder = tmp_path_factory.mktemp("tiny-player")
    tokenizer = tiny_tokenizer()
    tiny_model(tokenizer).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_a_tiny_hf_checkpoint_plays_end_to_end(run_dir, train_data, tiny_checkpoint, capsys):
    args = _parse(
        run_dir, "--model", tiny_checkpoint, "--exclude-train", train_data, "--max-steps", "3", "--max-new-tokens", "12"
    )
    assert args.func(args) == 0
    (path,) = (run_dir / "eval").glob("*.json")
    saved = json.loads(path.read_text())
    assert saved["player"] == str(tiny_checkpoint) and saved["overall"]["environments"] == 2
    assert saved["overall"]["steps"] == sum(e["steps"] for e in saved["environments"])
    assert "overall" in capsys.readouterr().out


def test_the_hf_player_batches_episodes_and_reports_context_overflow(run_dir, train_data, tiny_checkpoint):
    from factory.evaluate import HFPlayer

    player = HFPlayer.from_pretrained(tiny_checkpoint, device="cpu", max_new_tokens=8)
    sizes = []
    generate = player.model.generate
    player.model.generate = lambda **kw: sizes.append(len(kw["input_ids"])) or generate(**kw)
    report = evaluate(load_environments(run_dir, exclude_train=[train_data]), player, max_steps=2, concurrency=2)
    assert sizes[0] == 2  # both episodes' first turns in one generate call
    for episode in report.episodes:
        _consistent(episode, 2)
    player.model.config.max_position_embeddings = 64  # shorter than the first prompt
    cut = evaluate(load_environments(run_dir, exclude_train=[train_data]), player, max_steps=2)
    assert [e.status for e in cut.episodes] == ["player_error"] * 2 and "context_length" in cut.episodes[0].error
    assert cut.overall["player_errors"] == 2


def test_write_results_never_overwrites(run_dir, server):
    server.route(GARDEN["task"], *map(ok, GARDEN_PLAN))
    selection = load_environments(run_dir)
    selection.environments = [e for e in selection.environments if e.env_id == "garden:0"]
    report = evaluate(selection, LLMPlayer(llm_config("loopback", server.base_url)), max_steps=3)
    first, second = write_results(report, run_dir), write_results(report, run_dir)
    assert first != second and json.loads(second.read_text())["overall"]["success_rate"] == 1.0


def test_the_command_refuses_bad_input_in_one_line(run_dir, tmp_path):
    with pytest.raises(FactoryError, match="no run store"):
        cmd = _parse(tmp_path / "nowhere", "--model", "m")
        cmd.func(cmd)
    with pytest.raises(FactoryError, match="give the player"):
        cmd = _parse(run_dir)
        cmd.func(cmd)
    with pytest.raises(FactoryError, match="no such file"):
        cmd = _parse(run_dir, "--gguf", tmp_path / "missing.gguf")
        cmd.func(cmd)
    config = tmp_path / "eval.yaml"
    config.write_text("max_steps: 3\nmax_step: 4\n")
    with pytest.raises(FactoryError, match="field 'max_step': unknown field"):
        cmd = _parse(run_dir, "--model", "m", "-c", config)
        cmd.func(cmd)
