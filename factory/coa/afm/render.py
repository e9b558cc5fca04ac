"""Render AFM blocks for training: one string with masked spans, or turns.

Both forms come from one layout, so they always agree on which characters
train. The layout is AFM's (docs/afm_format.md, `blocks.make_blocks`): blocks
joined by a newline, and each observation written as the environment inserts
it, `\n<observation>\n...\n</observation>\n\n`. The masked (environment) part
of it is exactly what AFM's trainer masks with `ignore_observation`: from
`<observation` through the blank line after `</observation>`. The newline
before `<observation>` is the model's: AFM's trainer trains it (with Qwen's
tokenizer it is one token with the `>` of `</code>`), and so do we.

* `render_single(prompt, blocks)` -> `RenderedSingle`: the prompt, the one
  assistant completion, and `observation_spans`, the `(start, end)` character
  ranges of the completion to mask (offsets in the completion, not in
  prompt + completion).
* `render_multiturn(prompt, blocks)` -> `list[Turn]` (factory.records): the
  prompt as a user turn, then assistant turns (loss=True) alternating with
  observation turns (loss=False, role "tool" by default). Consecutive
  observations share one turn. `"".join(t.content for t in turns[1:])` is the
  single completion, so an assistant turn before an observation ends with the
  newline after its tool call. For OpenAI `messages`, whose `tool` role needs a
  tool_call_id, pass `observation_role="user"`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from factory.coa.afm.blocks import AFTER_OBSERVATION, SEPARATOR, Block, markup
from factory.coa.tools.registry import tool_tags
from factory.records import Turn


@dataclass(frozen=True)
class Segment:
    text: str
    masked: bool  # environment text: kept in context, out of the loss
    last_tag: str  # the last block it holds, to name the turn's kind


@dataclass(frozen=True)
class RenderedSingle:
    prompt: str
    completion: str
    observation_spans: tuple[tuple[int, int], ...]  # offsets in `completion`

    def as_turns(self) -> list[Turn]:
        """The SFT pair: the prompt (no loss) and the whole completion (loss; mask the spans)."""
        return [
            Turn(role="user", content=self.prompt, loss=False, kind="prompt"),
            Turn(role="assistant", content=self.completion, loss=True, kind="afm"),
        ]


def segments(blocks: list[Block]) -> list[Segment]:
    """The completion cut where masking changes; joined, the segments are the completion."""
    pieces: list[tuple[str, bool, str]] = []
    for i, block in enumerate(blocks):
        if i and blocks[i - 1].tag != "observation":
            pieces.append((SEPARATOR, False, blocks[i - 1].tag))
        if block.tag == "observation":
            pieces.append((markup(block.tag, block.text) + AFTER_OBSERVATION, True, block.tag))
        else:
            pieces.append((markup(block.tag, block.text), False, block.tag))
    merged: list[Segment] = []
    for text, masked, tag in pieces:
        if merged and merged[-1].masked == masked:
            text = merged.pop().text + text
        merged.append(Segment(text, masked, tag))
    return merged


def render_single(prompt: str, blocks: list[Block]) -> RenderedSingle:
    parts = segments(blocks)
    spans, offset = [], 0
    for segment in parts:
        if segment.masked:
            spans.append((offset, offset + len(segment.text)))
        offset += len(segment.text)
    completion = "".join(segment.text for segment in parts)
    return RenderedSingle(prompt, completion, tuple(spans))


def render_multiturn(
    prompt: str,
    blocks: list[Block],
    observation_role: Literal["tool", "user"] = "tool",
) -> list[Turn]:
    turns = [Turn(role="user", content=prompt, loss=False, kind="prompt")]
    for segment in segments(blocks):
        if segment.masked:
            turns.append(Turn(role=observation_role, content=segment.text, loss=False, kind="observation"))
        else:
            turns.append(Turn(role="assistant", content=segment.text, loss=True, kind=_assistant_kind(segment)))
    return turns


def _assistant_kind(segment: Segment) -> str:
    if segment.last_tag == "answer":
        return "answer"
    return "tool_call" if segment.last_tag in tool_tags() else "text"
