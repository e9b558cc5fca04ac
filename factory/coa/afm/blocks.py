"""AFM tagged text as blocks: `<tag>text</tag>` spans with character offsets.

`scan` reads a whole completion once and returns the blocks together with the
structural violations it met (unclosed, nested, stray closing tag, unknown tag,
tag text inside a block, free text between blocks). It never raises: a broken
trajectory is data to store with the rule it broke, not a crash.

Offsets are those of the whole tag span (`<tag>` to `</tag>` inclusive), so
that the loss mask can be decided by character offsets (tokenizer
`offset_mapping`), never by matching token ids of tag strings.

Observation text is environment output (a crawled page may well contain a
`<code>` element); inside an observation only `</observation>` means anything,
and no tag found there is reported. Tools should still pass their output
through `neutralize_tags` so that an `</observation>` in a page cannot end the
block early, nor a bare `observation>` end AFM's trainer's masked span.

`make_blocks` lays blocks out as AFM's rollout writes them (docs/afm_format.md):
each body on its own lines, `<tag>\nbody\n</tag>`, blocks joined by one newline,
and a blank line after every observation (`\n<observation>\n...\n</observation>\n\n`),
which AFM's trainer needs to close the span it masks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from factory.coa.tools.registry import tool_tags

TAGS = ("think", "plan", *tool_tags(), "observation", "reflection", "suggested_answer", "double_check", "answer")
SEPARATOR = "\n"  # between blocks in the canonical rendering
AFTER_OBSERVATION = "\n\n"  # the blank line that closes AFM's masked span (part of the span)

# Any `<name>` or `</name>`; whether the name is an AFM tag is decided after.
_TAG_TOKEN = re.compile(r"<(/?)([A-Za-z_][\w-]*)>")
_KNOWN_TAG_TOKEN = re.compile(r"<(/?)(%s)>" % "|".join(TAGS))
# What AFM's trainer matches (as token ids) to open and close a masked span; in tool text, escaped.
_TRAINER_MARKERS = re.compile(r"<observation|observation>")


@dataclass(frozen=True)
class Block:
    tag: str
    text: str  # what lies between the opening and the closing tag, unstripped
    start: int  # offset of `<tag>`
    end: int  # offset just past `</tag>`

    @property
    def body(self) -> str:
        """The text without the newlines that the canonical layout puts around it."""
        text = self.text[1:] if self.text.startswith("\n") else self.text
        return text[:-1] if text.endswith("\n") else text


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str
    block_index: int  # the block the problem is in or just before (len(blocks): after the last)
    pos: int | None = None  # character offset, for structural problems


def markup(tag: str, text: str) -> str:
    return f"<{tag}>{text}</{tag}>"


def make_blocks(pairs: list[tuple[str, str]]) -> list[Block]:
    """Blocks with the offsets they have in the canonical AFM text (see the module docstring).

    Bodies are trimmed first: blank lines around the model's text, and around a
    tool's output, are not part of what AFM writes.
    """
    blocks, offset = [], 0
    for tag, body in pairs:
        text = "\n" + (body.strip("\n") if tag == "observation" else body.strip()) + "\n"
        end = offset + len(markup(tag, text))
        blocks.append(Block(tag, text, offset, end))
        offset = end + len(AFTER_OBSERVATION if tag == "observation" else SEPARATOR)
    return blocks


def neutralize_tags(text: str) -> str:
    """Escape AFM tag strings in tool output so they read as text, not structure; likewise the bare
    `<observation` / `observation>` that AFM's trainer would take for the edge of a masked span."""
    text = _KNOWN_TAG_TOKEN.sub(lambda m: f"&lt;{m.group(1)}{m.group(2)}&gt;", text)
    return _TRAINER_MARKERS.sub(lambda m: m.group(0).replace("<", "&lt;").replace(">", "&gt;"), text)


@dataclass
class Scan:
    blocks: list[Block]
    violations: list[Violation]  # structural only, in text order


def parse_blocks(text: str) -> list[Block]:
    """The blocks of `text`, ignoring structural violations (see `scan`)."""
    return scan(text).blocks


def scan(text: str) -> Scan:
    """One pass over the tag tokens: outside a block, or inside one until its own closing tag."""
    result = Scan([], [])
    cursor = 0  # end of what has been accounted for outside blocks
    open_tag, open_at, inner = None, 0, []
    for token in _TAG_TOKEN.finditer(text):
        closing, name = token.group(1) == "/", token.group(2)
        if open_tag is not None:
            if closing and name == open_tag:
                _close_block(result, text[open_at : token.end()], open_at, open_tag, inner, closed=True)
                open_tag, cursor = None, token.end()
            elif name in TAGS and open_tag != "observation":
                inner.append(token)
            continue
        _check_free_text(result, text, cursor, token.start())
        cursor = token.end()
        if name not in TAGS:
            _report(result, "unknown_tag", f"unknown tag {token.group(0)!r}", token.start())
        elif closing:
            _report(result, "stray_close", f"{token.group(0)} closes no open block", token.start())
        else:
            open_tag, open_at, inner = name, token.start(), []
    if open_tag is not None:
        _report(result, "unclosed", f"<{open_tag}> is never closed", open_at)
        _close_block(result, text[open_at:], open_at, open_tag, inner, closed=False)
    else:
        _check_free_text(result, text, cursor, len(text))
    result.violations.sort(key=lambda v: v.pos)
    return result


def _report(result: Scan, rule: str, message: str, pos: int, block_index: int | None = None) -> None:
    index = len(result.blocks) if block_index is None else block_index
    result.violations.append(Violation(rule, message, index, pos))


def _check_free_text(result: Scan, text: str, start: int, end: int) -> None:
    stray = text[start:end]
    if stray.strip():
        shown = stray.strip()[:40]
        _report(result, "free_text", f"text outside any block: {shown!r}", start + len(stray) - len(stray.lstrip()))


def _close_block(result: Scan, span: str, start: int, tag: str, inner: list[re.Match], closed: bool) -> None:
    """`span` runs from `<tag>` to just past `</tag>` (to the end of the text when unclosed)."""
    body = span[len(tag) + 2 : len(span) - len(tag) - 3 if closed else len(span)]
    result.blocks.append(Block(tag, body, start, start + len(span)))
    if inner:
        _report_inner_tag(result, tag, inner, len(result.blocks) - 1)


def _report_inner_tag(result: Scan, tag: str, inner: list[re.Match], index: int) -> None:
    """Only the first tag inside a block is reported: the rest usually follows from it."""
    first = inner[0]
    closing, name = first.group(1) == "/", first.group(2)
    closed_later = any(t.group(1) == "/" and t.group(2) == name for t in inner[1:])
    if not closing and (name == tag or closed_later):
        _report(result, "nested", f"<{name}> opened inside <{tag}>", first.start(), index)
    else:
        _report(result, "tag_in_text", f"{first.group(0)} written inside <{tag}>", first.start(), index)
