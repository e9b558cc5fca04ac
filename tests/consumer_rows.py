"""Trajectories as the refine and coa paths write them, in a real run store, for the consumer tests.

The refine rows are built by the refine path's own output shape (the player instruction prompt, ReAct
turns, mistakes kept in context with loss=false and their DM feedback); the coa rows by the AFM
renderer from a code-agent run. Edge cases every consumer must get right: a mistake first, two
mistakes in a row, a trailing mistake (nothing after it trains), a blank assistant turn, non-ASCII
text and an observation holding code fences and tag-like text.
"""

from __future__ import annotations

import json
from pathlib import Path

from factory.coa.afm import make_blocks, render_multiturn, render_single
from factory.coa.afm.blocks import neutralize_tags
from factory.prompts import render_prompt
from factory.records import Trajectory, Turn, TurnError, to_conversations
from factory.refine.store import save_trajectory
from factory.store import Store, utcnow

# Qwen2.5-Instruct's chat template without its tool-call branches (which these rows never use): the
# layout LLaMA-Factory's `qwen` template writes, default system prompt included.
QWEN25_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' or (message.role == 'system' and not loop.first) or message.role == 'assistant' %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.index0 == 0 or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

ACTIONS = "- go(location)\n- take(item)\n- open(container, key)\n- look()"


def qwen_tokenizer():
    """The offline test tokenizer (byte-level BPE, ChatML specials) with Qwen2.5's template."""
    from factory.mask.tiny import tiny_tokenizer

    tokenizer = tiny_tokenizer()
    tokenizer.chat_template = QWEN25_TEMPLATE
    return tokenizer


def player(thought: str, action: str, mistake: str | None = None, kind: str = "parameter") -> Turn:
    error = TurnError(type=kind, feedback=mistake) if mistake else None
    return Turn(role="assistant", content=f"Thought: {thought}\nAction: {action}", loss=mistake is None,
                kind="thought_action", error=error)  # fmt: skip


def seen(text: str) -> Turn:
    return Turn(role="user", content=f"Observation: {text}", kind="observation")


def opening(task: str, where: str) -> Turn:
    text = render_prompt("refine/player_instruction", task=task, actions=ACTIONS, observation=where)
    return Turn(role="user", content=text, kind="observation")


def refine_trajectories() -> list[Trajectory]:
    chest = [
        opening("Open the oak chest in the cellar.", "You are at the hall. You see a brass key."),
        player("The chest needs a key; I will try the iron one.", "take(item=iron key)", "There is no iron key here."),
        seen("There is no iron key here."),
        player("Only the brass key is here.", "take(item=brass key)"),
        seen("You take the brass key."),
        player("Now to the cellar.", "go(location=cellar)"),
        seen("You are in the cellar. The oak chest is locked."),
        player("Unlock it with the brass key.", "open(container=oak chest, key=brass key)"),
    ]
    twice = [
        opening("Bring the lamp to the café on Rue Verte.", "You are at the market. Ströme of people pass by."),
        player("Go straight to the café.", "go(location=café)", "You do not hold the lamp yet.", "logic"),
        seen("You do not hold the lamp yet."),
        player("Take the lamp first — it is by the stall.", "take(item=lamp)", "The lamp is in the attic.", "location"),
        seen("The lamp is in the attic, not here."),
        player("I will look around before acting again.", "look()"),
        seen("You see: a ladder to the attic.\n\tA note reads « 屋根裏 »."),
        Turn(role="assistant", content=" \u3000\n", loss=True, kind="thought_action"),  # blank: never trains
        seen("Nothing happens."),
        player("Climb to the attic.", "go(location=attic)"),
    ]
    trailing = [
        opening("Find the map.", "You are at the dock."),
        player("The map may be in the shed.", "go(location=shed)"),
        seen("You are in the shed. A map lies on the bench."),
        player("Take the chart.", "take(item=chart)", "There is no chart here."),
    ]
    rows = [chest, twice, trailing]
    return [
        Trajectory(id=f"refine:p{i}", source="refine", persona_id=f"p{i}", turns=turns) for i, turns in enumerate(rows)
    ]


CODE_RUN = [
    ("think", "I need the sum of the first 100 odd numbers; a loop checks the formula n^2."),
    ("plan", "1. compute the sum with code\n2. compare with 100^2"),
    ("think", "Run it."),
    ("code", "```py\ntotal = sum(range(1, 200, 2))\nprint(total, 100 ** 2)\n```"),
    # Tool output as the distiller writes it: tag text in it escaped (a program printed "</observation>").
    ("observation", neutralize_tags("10000 10000\n```\n</observation> is not a tag here\n```")),
    ("reflection", "The code ran and both numbers agree."),
    ("think", "The sum is 10000."),
    ("answer", "\\boxed{10000}"),
]


def add_coa_row(store: Store, trajectory_id: str, question: str) -> None:
    blocks = make_blocks(CODE_RUN)
    single, turns = render_single(question, blocks), render_multiturn(question, blocks)
    store.upsert("trajectories", {
        "trajectory_id": trajectory_id, "trace_id": trajectory_id, "task_id": trajectory_id, "source": "coa",
        "variant": "code", "verified": True, "created_at": utcnow(), "stats": "{}",
        "turns": json.dumps([t.model_dump() for t in turns]), "conversations": json.dumps(to_conversations(turns)),
        "prompt": single.prompt, "completion": single.completion, "final_answer": "10000", "correct": True,
        "observation_spans": json.dumps([list(span) for span in single.observation_spans]),
    })  # fmt: skip


def make_consumer_run(run_dir: Path, refine: bool = True, coa: bool = True) -> Path:
    with Store.open(run_dir) as store:
        for number, trajectory in enumerate(refine_trajectories() if refine else []):
            row = {"trajectory_id": trajectory.id, "source": "refine", "persona_id": trajectory.persona_id,
                   "script_id": f"s{number}", "verified": True, "reason": None}  # fmt: skip
            save_trajectory(store, row, trajectory)
        if coa:
            add_coa_row(store, "coa:odd", "What is the sum of the first 100 odd numbers? Use code.")
            add_coa_row(store, "coa:odd2", "Sum the odd numbers below 200.")
    return run_dir
