"""One pair as a row of each preference format, in the shape its trainer's data code reads.

- `preference` (TRL's DPOTrainer, conversational preference): `prompt` a list of chat messages (a system
  message stays first in it: TRL hands the list to the tokenizer's chat template), `chosen` / `rejected`
  the assistant message(s) that continue it. TRL renders prompt + chosen and prompt + rejected with the
  template and trains what follows the prompt.
- `ranking` (LLaMA-Factory, `ranking: true` sharegpt): `conversations` the prompt in sharegpt turns
  (a system turn first as `from: system`, which LLaMA-Factory's converter takes as the system prompt;
  user `human`, tool `observation`, assistant `gpt`), alternating and ending with a human/observation
  turn; `chosen` / `rejected` one `gpt` turn each (its pairwise processor reads one response per side).
- `kto` (TRL's KTOTrainer, unpaired): `prompt`, `completion` (messages) and `label` (true: desirable), one
  row per side a pair has.

Each side is one assistant message in every format: LLaMA-Factory reads one response per side, and TRL trains
every token after the prompt, so a side of several messages would train the role headers between them and
any observation among them, which factory.mask.render never trains. Every row carries the pair's metadata columns
(pair_id, kind, source, task_id, script_id, trajectory_id), which the trainers ignore. A pair a format
cannot hold is counted under its reason.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterator

import pyarrow as pa

from .pairs_record import Message, Pair

MESSAGES = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
TURN = pa.struct([("from", pa.string()), ("value", pa.string())])
METADATA = [(name, pa.string()) for name in ("pair_id", "kind", "source", "task_id", "script_id", "trajectory_id")]
PREFERENCE_SCHEMA = pa.schema([*METADATA, ("prompt", MESSAGES), ("chosen", MESSAGES), ("rejected", MESSAGES)])
RANKING_SCHEMA = pa.schema([*METADATA, ("conversations", pa.list_(TURN)), ("chosen", TURN), ("rejected", TURN)])
KTO_SCHEMA = pa.schema(
    [("id", pa.string()), *METADATA, ("prompt", MESSAGES), ("completion", MESSAGES), ("label", pa.bool_())]
)

SHAREGPT_FROM = {"user": "human", "tool": "observation", "assistant": "gpt", "system": "system"}
ONE_SIDED = "one side only (a KTO row)"
LONG_SIDE = "a side of more than one message (the trainers would train the headers and observations between them)"
UNALIGNED = "ranking: the prompt does not alternate user/assistant turns ending with a user turn"


def both_sides(pair: Pair, skipped: Counter) -> bool:
    """Whether the pair has both sides, each one message; counts why not."""
    if not (pair.chosen and pair.rejected):
        skipped[pair.missing or ONE_SIDED] += 1
        return False
    if len(pair.chosen) != 1 or len(pair.rejected) != 1:
        skipped[LONG_SIDE] += 1
        return False
    return True


def preference_rows(pair: Pair, skipped: Counter) -> Iterator[dict[str, Any]]:
    if both_sides(pair, skipped):
        yield {**pair.metadata(), "prompt": pair.prompt, "chosen": pair.chosen, "rejected": pair.rejected}


def ranking_rows(pair: Pair, skipped: Counter) -> Iterator[dict[str, Any]]:
    if not both_sides(pair, skipped):
        return
    conversations = sharegpt_prompt(pair.prompt)
    if conversations is None:
        skipped[UNALIGNED] += 1
        return
    yield {**pair.metadata(), "conversations": conversations, "chosen": turn(pair.chosen[0]),
           "rejected": turn(pair.rejected[0])}  # fmt: skip


def turn(message: Message) -> dict[str, str]:
    return {"from": SHAREGPT_FROM[message["role"]], "value": message["content"]}


def sharegpt_prompt(prompt: list[Message]) -> list[dict[str, str]] | None:
    """The prompt as LLaMA-Factory's ranking rows need it (system? then user/assistant alternating, a user
    turn last), or None when it is not of that shape (turns are never merged: TRL reads the same text)."""
    system = prompt[:1] if prompt and prompt[0]["role"] == "system" else []
    rest = prompt[len(system) :]
    expected = [("user", "tool") if i % 2 == 0 else ("assistant",) for i in range(len(rest))]
    if len(rest) % 2 == 0 or any(m["role"] not in roles for m, roles in zip(rest, expected)):
        return None
    return [turn(m) for m in system + rest]


def kto_rows(pair: Pair, skipped: Counter) -> Iterator[dict[str, Any]]:
    """A desirable row for the chosen side, an undesirable one for the rejected side, whichever exist."""
    if pair.chosen is None and pair.missing and pair.missing != ONE_SIDED:
        skipped[f"no desirable row: {pair.missing}"] += 1
    for side, completion, label in (("chosen", pair.chosen, True), ("rejected", pair.rejected, False)):
        if completion and len(completion) != 1:
            skipped[LONG_SIDE] += 1
        elif completion:
            yield {"id": f"{pair.pair_id}/{side}", **pair.metadata(), "prompt": pair.prompt,
                   "completion": completion, "label": label}  # fmt: skip
