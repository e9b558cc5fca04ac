"""Error injection (issue 13): mistakes spread over the trajectory, thoughts in the trajectory's own
voice, a configurable error mix and a distribution of mistake counts.

The many-rows tests run the real pipeline over loopback HTTP against `WorldPlayer`, a scripted
model that reads each trajectory request like a model would (the story so far, the open thoughts
the schema asks for), plays the shortest plan from where the story stands with its own occasional
slips, judges each move correctly as the DM, and writes a varied thought for every open slot.
The figures come from `refine_quality(store)`.
"""

import asyncio
import json
import random
from collections import Counter

import pytest
from loopback_server import ok
from test_refine_verify import GOOD
from test_refine_world import GARDEN

from factory.llm import LLMClient
from factory.paths import prompts_dir
from factory.refine.config import RefineConfig
from factory.refine.grounding import state_after
from factory.refine.inject import (
    candidate_positions,
    draw_target,
    eligible_positions,
    fill_open,
    inject_mistakes,
    open_lines,
    open_slots,
)  # fmt: skip
from factory.refine.pipeline import refine_one
from factory.refine.quality import refine_quality
from factory.refine.roles import TrajectorySimulator
from factory.refine.schemas import MISSING_LINES, MISSING_THOUGHTS, from_wire, param_values, to_wire
from factory.refine.script import Script
from factory.refine.slips import SlipMix, finishing_actions, slips_here
from factory.refine.solvable import shortest_plan
from factory.refine.verify import verify_steps
from factory.refine.world import WorldState, check_action, format_action, step
from factory.store import Store

SCRIPT_MARK = "Write a script for an adventure"
OPENERS = ["Hmm,", "Right,", "Okay, so", "Looking around,", "Let me think:", "Alright,", "From what I see,",
           "So far so good;", "Wait,", "Now", "I reckon", "Thinking it over,"]  # fmt: skip
REASONS = ["{a} seems the obvious next move", "I could try {a} and see", "{a} should get me closer",
           "my best guess is {a}", "I'll go with {a}", "{a} looks right from here", "trying {a} feels sensible",
           "nothing stops me doing {a}"]  # fmt: skip
LINES = ["That gets you nowhere: {a} is not possible as things stand.", "Nothing happens when you try {a}.",
         "You try {a}, but it does not work out.", "{a}? Not like this, not yet."]  # fmt: skip
TAILS = ["", " before anything else", " to keep things moving", " since the task needs it", " for now",
         " while I'm here", " if I remember the layout", " given what I was told"]  # fmt: skip


class WorldPlayer:
    """The loopback server's answer to trajectory requests for one script (see the module docstring)."""

    def __init__(self, script: Script, slip: float = 0.0):
        self.script, self.slip = script, slip
        self.rng = random.Random(0)  # the sampling: one stream over the whole run, like a temperature
        self.written: list[str] = []  # every missing thought it wrote
        self.lines: list[str] = []  # every missing DM line it wrote

    def thought(self, call: str) -> str:
        text = f"{self.rng.choice(OPENERS)} {self.rng.choice(REASONS).format(a=call)}{self.rng.choice(TAILS)}."
        return text[0].upper() + text[1:]

    def __call__(self, body: dict) -> str:
        user = body["messages"][-1]["content"]
        story = []
        if "The story so far" in user:
            lines = user.split("The story so far", 1)[1].split("\n")[1:]
            story = [from_wire(json.loads(line)) for line in lines if line.startswith("{")]
        schema = body["response_format"]["json_schema"]["schema"]
        missing = schema["properties"].get(MISSING_THOUGHTS, {}).get("minItems", 0)
        thoughts = [
            self.thought(format_action(s["action"]["name"], s["action"]["params"]))
            for s in story
            if s["thought"].startswith("<missing thought")
        ]
        assert len(thoughts) == missing
        self.written += thoughts
        lines = [
            self.rng.choice(LINES).format(a=format_action(s["action"]["name"], s["action"]["params"]))
            for s in story
            if s["observation"].startswith("<missing DM line")
        ]
        assert len(lines) == schema["properties"].get(MISSING_LINES, {}).get("minItems", 0)
        self.lines += lines
        reply = {"steps": [to_wire(s) for s in self.play(state_after(self.script, story))]}
        if missing:
            reply[MISSING_THOUGHTS] = thoughts
        if lines:
            reply[MISSING_LINES] = lines
        return json.dumps(reply)

    def play(self, state: WorldState) -> list[dict]:
        steps = []
        for name, params in shortest_plan(self.script, state) or []:
            if self.rng.random() < self.slip:  # its own mistake, judged right, corrected by the plan's move
                steps.append(self.move(state, *self.slip_call(state)))
            steps.append(self.move(state, name, params))
            state = step(self.script, state, name, params).after
        return steps

    def slip_call(self, state: WorldState) -> tuple[str, dict]:
        for _ in range(50):
            action = self.rng.choice(self.script.actions)
            params = {p.name: self.rng.choice(param_values(self.script, p)) for p in action.parameters}
            if not check_action(self.script, state, action.name, params).ok:
                return action.name, params
        return "dance", {}

    def move(self, state: WorldState, name: str, params: dict) -> dict:
        moved = step(self.script, state, name, params)
        params = moved.check.params or params  # a valid call in its declared types, as the wire offers it
        observation = moved.check.reason if not moved.check.ok else "Done; you see what changed."
        return {"thought": self.thought(format_action(name, params)), "action": {"name": name, "params": params},
                "dm_thinking": "Checked against the rules.", "observation": observation,
                "evaluation": {"error": moved.check.error_type or "none", "task_done": bool(moved.done)}}  # fmt: skip


def tea_script() -> dict:
    """The few-shot tea script (six moves to the goal), declarative."""
    tea = json.loads((prompts_dir() / "refine" / "script_examples.json").read_text())[2]
    return {**tea, "actions": [{k: v for k, v in a.items() if k != "validation_code"} for a in tea["actions"]]}


def run_rows(server, fast_config, tmp_path, settings: RefineConfig, rows: int, slip: float = 0.0, data=None):
    data = data or tea_script()
    player = WorldPlayer(Script.model_validate(data), slip)
    server.content = player
    server.route(SCRIPT_MARK, *[ok(data)] * rows)
    store = Store(tmp_path / "rows.sqlite")

    async def run():
        async with LLMClient(fast_config(cache=False), store) as llm:  # one script for all: each row samples anew
            return [await refine_one(llm, store, f"p{i}", "A gardener.", settings) for i in range(rows)]

    return asyncio.run(run()), store, player


def injected_steps(store: Store) -> list[dict]:
    rows = store.query("SELECT steps FROM trajectories WHERE verified ORDER BY trajectory_id")
    return [s for (steps,) in rows for s in json.loads(steps) if s.get("injected")]


# --- the figures over many seeded rows -------------------------------------------------------------------------


def test_mistakes_spread_over_the_trajectory_and_most_first_moves_train(server, fast_config, tmp_path):
    settings = RefineConfig(with_code=False, seed=5)
    verified, store, player = run_rows(server, fast_config, tmp_path, settings, rows=40, slip=0.15)
    assert all(verified)
    q = refine_quality(store)
    print("\nquality:", json.dumps({k: q[k] for k in ("first_mistake", "mistakes_per_row", "first_turn_trains",
                                                       "error_types", "thoughts")}))  # fmt: skip
    first = q["first_mistake"]
    assert set(first) - {1}, first  # not always at the first move
    assert first.get(1, 0) <= 0.35 * q["verified"]
    assert q["first_turn_trains"] >= 0.65  # most rows train on the opening move
    assert len([n for n, rows in q["mistakes_per_row"].items() if rows]) >= 2  # counts vary
    assert min(q["mistakes_per_row"]) >= settings.min_corrections
    thoughts = q["thoughts"]
    assert thoughts["share_repeated"] <= 0.1 and thoughts["top_prefix_share"] <= 0.25, thoughts
    injected = injected_steps(store)
    assert injected and {s["thought"] for s in injected} <= set(player.written)  # the model's words, no template
    assert {s["observation"] for s in injected} <= set(player.lines)  # the DM line too
    assert all(not s["thought"].startswith("<missing") for s in injected)


def test_each_rows_mistake_count_is_drawn_from_the_config(server, fast_config, tmp_path):
    settings = RefineConfig(with_code=False, seed=2, mistake_counts={2: 1, 3: 1})
    verified, store, _ = run_rows(server, fast_config, tmp_path, settings, rows=24)
    assert all(verified)
    counts = refine_quality(store)["mistakes_per_row"]
    assert set(counts) == {2, 3} and min(counts.values()) >= 5, counts  # the player makes none: all injected


@pytest.mark.parametrize(
    "mix, expected",
    [({"wrong_place": 1}, {"wrong_place": 1.0}),  # a row's second slip is another kind where it can:
     ({"wrong_amount": 1, "missing_item": 1}, {"wrong_amount": 0.5, "missing_item": 0.5})],
)  # fmt: skip
def test_the_slip_mix_follows_the_config(server, fast_config, tmp_path, mix, expected):
    weights = dict.fromkeys(SlipMix().mix, 0.0) | mix
    settings = RefineConfig(with_code=False, seed=9, slip_mix=weights, mistake_counts={3: 1})
    verified, store, _ = run_rows(server, fast_config, tmp_path, settings, rows=24)
    assert all(verified)
    kinds = Counter(s["injected"] for s in injected_steps(store))
    total = sum(kinds.values())
    assert total >= 40  # 3 a row where the kinds allowed fit
    for kind, share in expected.items():
        assert abs(kinds[kind] / total - share) <= 0.12, kinds
    assert kinds.keys() == mix.keys()


def test_a_row_with_enough_own_mistakes_gets_none_injected(server, fast_config, tmp_path):
    settings = RefineConfig(with_code=False, seed=1, mistake_counts={2: 1}, max_steps=14)  # a slip before every move
    verified, store, _ = run_rows(server, fast_config, tmp_path, settings, rows=12, slip=1.0)
    assert all(verified) and not injected_steps(store)
    assert store.query("SELECT max(llm_calls) FROM trajectories")[0][0] == 2  # script + one play


# --- the pieces -----------------------------------------------------------------------------------------------


@pytest.fixture
def script():
    return Script.model_validate(GARDEN)


CLEAN = GOOD[1:2] + GOOD[3:]  # take, go, water (done): no mistakes


def test_positions_avoid_the_finished_step_and_neighbours_of_mistakes():
    assert eligible_positions(CLEAN) == [0, 1, 2]  # never after the step that completes the task
    assert eligible_positions(GOOD) == [4]  # only before the last move: every other spot touches a mistake
    assert eligible_positions(CLEAN[:2]) == [0, 1, 2]  # an unfinished story can take one at its end


def test_the_first_move_is_tried_first_at_its_configured_share():
    rng = random.Random(0)
    firsts = sum(candidate_positions(CLEAN, 0.2, rng)[0] == 0 for _ in range(2000))
    assert 300 <= firsts <= 500
    assert all(candidate_positions(CLEAN, 0.0, rng)[0] != 0 for _ in range(200))
    assert candidate_positions(CLEAN[2:], 0.0, rng) == [0]  # nowhere else to go


def test_draw_target_follows_the_weights_and_the_minimum():
    rng = random.Random(1)
    drawn = Counter(draw_target({1: 1, 3: 3}, 2, rng) for _ in range(4000))
    assert drawn.keys() == {2, 3} and 0.7 <= drawn[3] / 4000 <= 0.8


def test_injection_keeps_earlier_steps_as_corrections_and_cuts_after_the_last(script):
    rng = random.Random(3)
    prefix = inject_mistakes(script, CLEAN, 3, SlipMix(), 1.0, rng)
    kinds = [("mistake" if s.get("injected") else s.get("open_thought", "kept")) for s in prefix]
    assert kinds == ["mistake", "correction", "mistake", "correction", "mistake"]
    assert [s["action"]["name"] for s in prefix if not s.get("injected")] == ["take", "go"]
    assert verify_steps(script, prefix, min_corrections=0).rule == "not_done"  # every step judged right
    assert open_lines(prefix) == [0, 2, 4]  # every injected step's DM line is the model's to write
    filled = fill_open(prefix, ["a", "b", "c", "d", "e"], ["x", "y", "z"])
    assert [s["thought"] for s in filled] == ["a", "b", "c", "d", "e"] and not open_slots(filled)
    assert [filled[i]["observation"] for i in (0, 2, 4)] == ["x", "y", "z"] and not open_lines(filled)
    assert filled[1]["rewritten_thought"] and fill_open(prefix, ["a"], ["x", "y", "z"]) is None
    assert fill_open(prefix, ["a", "b", "c", "d", "e"], ["x", " ", "z"]) is None  # a blank DM line


def test_injected_kinds_follow_the_mix_where_possible(script):
    rng = random.Random(0)
    state = WorldState("garden", [], {"kitchen": ["watering_can"]}, set())  # many kinds are possible here
    found = slips_here(script, [state, state], set(), finishing_actions(script))  # the last move changed nothing
    assert found.keys() == {"wrong_place", "missing_item"}  # too much water would fail anyway: no wrong amount
    mix = SlipMix({"wrong_place": 1, "missing_item": 1})
    kinds = Counter(mix.draw(found, "middle", set(), rng) for _ in range(400))
    assert kinds.keys() == {"wrong_place", "missing_item"} and 150 <= kinds["wrong_place"] <= 250
    held = Counter(mix.draw(found, "middle", {"wrong_place"}, rng) for _ in range(400))  # the row has one
    assert held["wrong_place"] < 0.3 * 400
    assert SlipMix({"premature_finish": 1}).draw(found, "middle", set(), rng) is None  # impossible here


def test_the_request_marks_open_thoughts_and_lines_and_asks_for_one_each(script):
    prefix = inject_mistakes(script, CLEAN, 2, SlipMix(), 0.0, random.Random(4))
    request = TrajectorySimulator().request(script, prefix, 1, "t")
    user = request.messages[-1]["content"]
    assert "<missing thought 1: why the player tries this move>" in user
    assert "<missing thought 2: the player's reaction to the observation just before>" in user
    assert "<missing thought 3: why" in user and "3 of the player's thoughts" in user  # mistake, correction, mistake
    assert "<missing DM line 2: what the DM tells the player" in user and "2 of the DM's lines" in user
    spec = request.response_model["properties"][MISSING_THOUGHTS]
    assert spec["minItems"] == spec["maxItems"] == len(open_slots(prefix)) == 3
    lines = request.response_model["properties"][MISSING_LINES]
    assert lines["minItems"] == lines["maxItems"] == 2
    assert "injected" not in user and "open_thought" not in user  # bookkeeping stays off the wire
    plain = TrajectorySimulator().request(script, CLEAN[:1], 1, "t").response_model
    assert MISSING_THOUGHTS not in plain["properties"] and MISSING_LINES not in plain["properties"]
