"""Render AFM blocks for training: one string with masked spans, or turns.

Both forms come from one layout, so they always agree on which characters
train. Blocks are written as `<tag>text</tag>` joined by `SEPARATOR`; the
masked (environment) part of the layout is each observation *together with the
separators on both sides of it*. That keeps every assistant turn starting with
an opening tag and ending with a closing tag (a tool call ends exactly at its
stop string, e.g. `</code>`), and makes the tool turn the whole of what the
environment inserts: `"\\n<observation>...</observation>\\n"`.

* `render_single(prompt, blocks)` -> `RenderedSingle`: the prompt, the one
  assistant completion, and `observation_spans`, the `(start, end)` character
  ranges of the completion to mask (offsets in the completion, not in
  prompt + completion).
* `render_multiturn(prompt, blocks)` -> `list[Turn]` (factory.records): the
  prompt as a user turn, then assistant turns (loss=True) alternating with
  observation turns (loss=False, role "tool" by default). Consecutive
  observations share one turn. `"".join(t.content for t in turns[1:])` is the
  single completion. For OpenAI `messages`, whose `tool` role needs a
  tool_call_id, pass `observation_role="user"`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from factory.coa.afm.blocks import SEPARATOR, TOOL_TAGS, Block, markup
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


def segments(blocks: list[Block], sep: str = SEPARATOR) -> list[Segment]:
    """The completion cut where masking changes; joined, the segments are the completion."""
    pieces: list[tuple[str, bool, str]] = []
    for i, block in enumerate(blocks):
        observed = block.tag == "observation"
        if i:
            beside_observation = observed or blocks[i - 1].tag == "observation"
            pieces.append((sep, beside_observation, blocks[i - 1].tag))
        pieces.append((markup(block.tag, block.text), observed, block.tag))
    merged: list[Segment] = []
    for text, masked, tag in pieces:
        if merged and merged[-1].masked == masked:
            text = merged.pop().text + text
        merged.append(Segment(text, masked, tag))
    return merged


def render_single(prompt: str, blocks: list[Block], sep: str = SEPARATOR) -> RenderedSingle:
    parts = segments(blocks, sep)
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
    sep: str = SEPARATOR,
) -> list[Turn]:
    turns = [Turn(role="user", content=prompt, loss=False, kind="prompt")]
    for segment in segments(blocks, sep):
        if segment.masked:
            turns.append(Turn(role=observation_role, content=segment.text, loss=False, kind="observation"))
        else:
            turns.append(Turn(role="assistant", content=segment.text, loss=True, kind=_assistant_kind(segment)))
    return turns


def _assistant_kind(segment: Segment) -> str:
    if segment.last_tag == "answer":
        return "answer"
    return "tool_call" if segment.last_tag in TOOL_TAGS else "text"
