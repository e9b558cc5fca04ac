"""The LLM roles of the AgentRefine path (factory.llm.role): prompts, reply types, parsing.

Roles hold no I/O: they build requests and read results (DESIGN rule 6).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..llm import Request
from ..llm.role import Role, chat
from ..prompts import load_prompt, prompt_file, render_prompt
from .inject import open_lines, open_slots
from .narration import describe_goal, describe_rules, opening_observation
from .schemas import (
    MISSING_LINES,
    MISSING_THOUGHTS,
    SCAFFOLD_KEYS,
    TEXT_MAX,
    WIRE_KEYS,
    from_wire,
    scaffold_schema,
    to_wire,
    trajectory_schema,
)
from .script import DeclarativeScriptDraft, Script, ScriptDraft
from .values import valid_typed
from .world import format_action

# Reply budgets (Request.reply_tokens, sized into max_tokens up to llm.max_tokens_cap): the longest reply a
# request asks for, counted at 3 characters a token (JSON and code tokenise denser than prose: more room,
# never less). A fixed 1024 cut a capable model's 3-4k-character script or trajectory off mid-JSON.
CHARS_PER_TOKEN = 3
CODE_CHARS = 600  # one action's validation code, written in full
MAX_ACTIONS = 6  # the script prompt asks for 3 to 6 actions
STEP_EXTRA_CHARS = 250  # a step's keys, action call and evaluation, beside its three bounded texts


def _example(name: str) -> Any:
    return _read_example(prompt_file(f"refine/{name}"))  # the run's prompts_dir copy when it has one


@lru_cache(maxsize=None)
def _read_example(path: Path) -> Any:
    return json.loads(path.read_text())


class ScriptWriter(Role):
    """Persona → script (environment, task, actions), few-shot with three examples."""

    name, reply_type = "script_writer", ScriptDraft

    def __init__(self, with_code: bool = True):
        self.with_code = with_code
        self.response_model = ScriptDraft if with_code else DeclarativeScriptDraft

    def _system(self) -> str:
        examples = _example("script_examples.json")
        if not self.with_code:
            examples = [_without_code(e) for e in examples]
        shown = "\n\n".join(json.dumps(e, separators=(",", ":")) for e in examples)
        instruction = load_prompt("refine/script_code_instruction") if self.with_code else ""
        return render_prompt("refine/script_system", examples=shown, code_instruction=instruction)

    def request(
        self, persona_id: str, persona: str, attempt: int, feedback: list[str] | None = None,
        previous: ScriptDraft | None = None,
    ) -> Request:  # fmt: skip
        """A retry (`feedback` on the `previous` script) shows the failed script as the model's own
        last turn, so the problems, which name its actions and facts, refer to something it can see."""
        messages = chat(self._system(), render_prompt("refine/script_user", persona=persona))
        if feedback:
            if previous is not None:
                messages.append({"role": "assistant", "content": self.shown(previous)})
            messages.append(
                {"role": "user", "content": render_prompt("refine/script_feedback", problems="; ".join(feedback))}
            )
        return Request(messages, self.response_model, stage="script", sample_index=attempt, tag=persona_id,
                       reply_tokens=self.reply_tokens())  # fmt: skip

    def reply_tokens(self) -> int:
        """Twice the longest example script shown, plus every action's code when code is asked for."""
        examples = _example("script_examples.json")
        longest = max(len(self.shown(ScriptDraft.model_validate(e))) for e in examples)
        return (2 * longest + (MAX_ACTIONS * CODE_CHARS if self.with_code else 0)) // CHARS_PER_TOKEN

    def shown(self, script: ScriptDraft) -> str:
        """A script as the writer wrote it: the draft's fields only, in the examples' compact JSON."""
        draft = script.model_dump(include=set(ScriptDraft.model_fields), exclude_none=True)
        return json.dumps(draft if self.with_code else _without_code(draft), separators=(",", ":"))

    @staticmethod
    def parse(draft: ScriptDraft, persona_id: str) -> Script:
        return Script(persona_id=persona_id, **draft.model_dump())


def _without_code(script: dict) -> dict:
    actions = [{k: v for k, v in a.items() if k != "validation_code"} for a in script["actions"]]
    return {**script, "actions": actions}


def describe_actions(script: Script) -> str:
    """The actions as the player sees them: names, typed valid values, descriptions; no rules."""
    lines = []
    for action in script.actions:
        params = ", ".join(f"{p.name} in {json.dumps(valid_typed(p))}" for p in action.parameters) or "no parameters"
        lines.append(f"- {action.name}({params}): {action.description}")
    return "\n".join(lines)


def describe_environment(script: Script) -> str:
    """The whole world as the DM knows it, facts included."""
    env = script.environment
    places = "; ".join(
        f"{loc.name} ({loc.description} items: {', '.join(loc.items) or 'none'})" for loc in env.locations
    )
    held = ", ".join(env.player.inventory) or "nothing"
    facts = ", ".join(f"{f.name}={str(f.initially).lower()}" for f in env.facts)
    return f"{places}. The player starts at {env.player.location} holding {held}." + (
        f" Facts at the start: {facts}." if facts else ""
    )


def dm_rules(script: Script) -> str:
    """What the DM judges by: every action's preconditions and effects, and the goal."""
    return "\n".join([describe_rules(a) for a in script.actions] + [f"Goal: {describe_goal(script)}."])


class TrajectorySimulator(Role):
    """One call plays both the DM and the player; a verified prefix is continued."""

    name, reply_type = "trajectory_simulator", dict  # the schema is built per request (trajectory_schema)

    def __init__(self, min_corrections: int = 2, min_steps: int = 2, max_steps: int = 10):
        self.min_corrections = min_corrections
        self.min_steps = min_steps
        self.max_steps = max_steps

    def request(self, script: Script, prefix: list[dict], attempt: int, trajectory_id: str) -> Request:
        example = {"steps": [to_wire(s) for s in _example("trajectory_example.json")["steps"]]}
        example = json.dumps(example, separators=(",", ":"))
        system = render_prompt("refine/trajectory_system", min_corrections=self.min_corrections, example=example)
        progress, open_thoughts, lines = "", 0, 0
        if prefix:
            numbers = {index: n for n, index in enumerate(open_slots(prefix), start=1)}
            line_numbers = {index: n for n, index in enumerate(open_lines(prefix), start=1)}
            shown = "\n".join(
                json.dumps(_shown(s, numbers.get(i), line_numbers.get(i)), separators=(",", ":"))
                for i, s in enumerate(prefix)
            )
            progress = render_prompt("refine/trajectory_continue", steps=shown)
            open_thoughts, lines = len(numbers), len(line_numbers)
            if lines:
                progress += "\n" + render_prompt("refine/trajectory_dm_lines", count=lines)
            if open_thoughts:
                progress += "\n" + render_prompt("refine/trajectory_thoughts", count=open_thoughts)
        user = render_prompt(
            "refine/trajectory_user", environment=describe_environment(script), task=script.task,
            actions=describe_actions(script), rules=dm_rules(script), progress=progress,
            opening=opening_observation(script),  # the player's first observation, as its instruction shows it
        )  # fmt: skip
        schema = trajectory_schema(script, self.min_steps if not prefix else 1, self.max_steps, open_thoughts, lines)
        reply = self.max_steps * (3 * TEXT_MAX + STEP_EXTRA_CHARS) + (open_thoughts + lines) * TEXT_MAX  # the bounds
        return Request(chat(system, user), schema, stage="trajectory", sample_index=attempt, tag=trajectory_id,
                       reply_tokens=reply // CHARS_PER_TOKEN)  # fmt: skip

    @staticmethod
    def parse(parsed: dict) -> list[dict]:
        return [from_wire(step) for step in parsed["steps"]]

    @staticmethod
    def missing_thoughts(parsed: dict) -> list[str]:
        """The thoughts written for the story's open slots (inject.py), in order."""
        return list(parsed.get(MISSING_THOUGHTS) or [])

    @staticmethod
    def missing_lines(parsed: dict) -> list[str]:
        """The DM's lines written for the story's open observations (injected mistakes), in order."""
        return list(parsed.get(MISSING_LINES) or [])


def _shown(step: dict, number: int | None, line: int | None = None) -> dict:
    """A step of the story so far as the model reads it; an open thought or DM line shows as its numbered marker."""
    wire = to_wire(step)
    markers = _example("injected_step.json")
    if number is not None:
        wire[WIRE_KEYS["thought"]] = markers[step["open_thought"]].format(n=number)
    if line is not None:
        wire[WIRE_KEYS["observation"]] = markers["dm_line"].format(n=line)
    return wire


class ThoughtWriter(Role):
    """The scaffolded trajectory's one LLM role (scaffold.py): the player's thoughts for moves the world
    already played, all steps in one call."""

    name, reply_type = "thought_writer", dict  # the schema is built per request (scaffold_schema)

    def __init__(self, max_thought: int = 150):
        self.max_thought = max_thought

    def request(self, script: Script, steps: list[dict], attempt: int, trajectory_id: str) -> Request:
        user = render_prompt(
            "refine/trajectory_scaffold_user",
            task=script.task,
            actions=describe_actions(script),
            observation=opening_observation(script),
            count=len(steps),
        )
        calls = [format_action(s["action"]["name"], s["action"]["params"]) for s in steps]
        schema = scaffold_schema(calls, [s["observation"] for s in steps], max_thought=self.max_thought)
        system = load_prompt("refine/trajectory_scaffold_system")
        reply = sum(len(call) + len(s["observation"]) + self.max_thought + 40 for call, s in zip(calls, steps))
        return Request(chat(system, user), schema, stage="trajectory", sample_index=attempt, tag=trajectory_id,
                       reply_tokens=reply // CHARS_PER_TOKEN)  # fmt: skip

    @staticmethod
    def parse(parsed: dict) -> list[str]:
        return [step[SCAFFOLD_KEYS["thought"]] for step in parsed["steps"]]
