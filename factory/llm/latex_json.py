"""LaTeX written with single backslashes inside JSON strings, found and repaired.

A model that writes `{"answer": "\\boxed{\\frac{1}{2}}"}` with one backslash each
gets `\\b` (backspace) + "oxed" and `\\f` (form feed) + "rac" from any JSON
decoder, and `\\sqrt`, `\\alpha`, `\\cdot` make the JSON invalid. This module
rewrites the raw reply text before it is parsed, inside string values only
(keys and structure are copied as they are), by doubling the backslash where
LaTeX was meant:

- an invalid JSON escape (`\\s`, `\\a`, `\\c`, `\\(`, `\\{`, `\\u` without four
  hex digits ...) can only mean a literal backslash: always repaired;
- `\\b`, `\\f`, `\\r` followed by a letter: a backspace, form feed or lone
  carriage return before a word is never meant in generated text: repaired;
- `\\n`, `\\t` followed by letters are repaired when the whole letter run is a
  known command (`\\nabla`, `\\theta`, `\\text`); "\\nThe" stays a newline.
  A command whose tail can begin text (`\\nu`, `\\ne`, `\\ni`, `\\to`,
  `\\tan`, `\\nless` ...: newline + "u", tab + "an") is read as LaTeX in math
  (`$...$`, `$$...$$`, `\\(...\\)`, `\\[...\\]`) or in a command's brace argument
  (`\\boxed{\\nu}`), where LaTeX is what is written; in a string with no other
  LaTeX it stays whitespace (code: "i = 0\\ni += 1"); anywhere else it is
  ambiguous, and the caller re-asks (see `Scan.ambiguous`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .latex_commands import LATEX_COMMANDS

_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL)
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[bfnrt][A-Za-z]*|.)", re.DOTALL)
_LETTERS = re.compile(r"[A-Za-z]*")
_COMMAND_IN_VIEW = re.compile(r"\\[A-Za-z]+")
_COMMAND_BEFORE = re.compile(r"(?:\\[A-Za-z]+|[\^_}])\Z")
# Math in the decoded text: $$...$$, \[...\], \(...\), and $...$ on one line; an escaped `\$` never opens it.
_MATH = re.compile(r"\\[$\\]|\$\$(.*?)\$\$|\\\[(.*?)\\\]|\\\((.*?)\\\)|\$((?:\\.|[^$\\\n])*?)\$", re.DOTALL)
_JSON_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# Tails (a command without its first letter) that can begin text after a line break or a tab:
# besides any single letter (a variable, "i"), these words. \neq, \not, \tau have none.
_TEXTLIKE_TAILS = frozenset({"an", "op", "eg", "less", "mid", "sim", "exists", "parallel"})


@dataclass
class Scan:
    """The reply text with LaTeX backslashes doubled, and what was found."""

    text: str
    repaired: list[str] = field(default_factory=list)  # commands as meant, e.g. "\\frac"
    ambiguous: list[tuple[str, str]] = field(default_factory=list)  # (key, "\\nu") left as JSON reads them


def repair_latex_escapes(text: str) -> Scan:
    """Double the backslash of LaTeX commands in the string values of a JSON text."""
    if "\\" not in text:
        return Scan(text)
    scan = Scan(text)
    out: list[str] = []
    done, key = 0, ""
    for match in _STRING.finditer(text):
        if _is_key(text, match.end()):
            key = match.group(1)
            continue
        body = match.group(1)
        if "\\" not in body:
            continue
        fixed = _repair_string(body, key, scan)
        if fixed != body:
            out.append(text[done : match.start(1)])
            out.append(fixed)
            done = match.end(1)
    scan.text = "".join(out) + text[done:] if out else text
    return scan


def _is_key(text: str, end: int) -> bool:
    rest = text[end : end + 64].lstrip()
    return rest.startswith(":")


def _repair_string(body: str, key: str, scan: Scan) -> str:
    """One string literal's raw body: repair the clear cases, weigh the doubtful ones."""
    view, repair_at, doubtful = _read_escapes(body, scan)
    if doubtful:
        math = _math_spans(view)
        has_latex = _has_other_latex(view, {at for _, at, _ in doubtful})
        for offset, at, shown in doubtful:
            if any(start <= at < end for start, end in math):
                repair_at.append(offset)
                scan.repaired.append(shown)
            elif has_latex:
                scan.ambiguous.append((key, shown))
    return _double_backslashes(body, sorted(repair_at))


def _read_escapes(body: str, scan: Scan) -> tuple[str, list[int], list[tuple[int, int, str]]]:
    """The decoded text with every escape that may be LaTeX shown as LaTeX (the view), the
    offsets of backslashes to double, and the doubtful escapes: (offset in body, offset in view, command)."""
    pieces: list[str] = []
    repair_at: list[int] = []
    doubtful: list[tuple[int, int, str]] = []
    done, view_len = 0, 0
    for match in _ESCAPE.finditer(body):
        escape, plain = match.group(1), body[done : match.start()]
        verdict, shown = _classify(escape, body, match.end())
        if verdict == "repair":
            repair_at.append(match.start())
            scan.repaired.append(shown)
        elif verdict == "doubtful":
            doubtful.append((match.start(), view_len + len(plain), shown))
        piece = _decoded(escape) if verdict == "keep" else "\\" + escape
        pieces += (plain, piece)
        view_len += len(plain) + len(piece)
        done = match.end()
    pieces.append(body[done:])
    return "".join(pieces), repair_at, doubtful


def _classify(escape: str, body: str, end: int) -> tuple[str, str]:
    """("keep" | "repair" | "doubtful", the command as LaTeX) for one escape's text after its backslash."""
    first = escape[0]
    if first == "u" and len(escape) == 5:
        return "keep", ""  # a real \uXXXX escape (the pattern takes four hex digits or none)
    if first in "bfnrt":
        if len(escape) == 1:
            return "keep", ""  # whitespace before a non-letter: "\n\n", "\n- item", "\t1"
        if first in "bfr" or _is_unambiguous_command(escape):
            return "repair", "\\" + escape
        return ("doubtful", "\\" + escape) if escape in LATEX_COMMANDS else ("keep", "")
    if first in "\"\\/":
        return "keep", ""
    return "repair", "\\" + escape + _LETTERS.match(body, end).group()  # invalid JSON: only a backslash fits


def _is_unambiguous_command(word: str) -> bool:
    tail = word[1:]
    return word in LATEX_COMMANDS and len(tail) > 1 and tail not in _TEXTLIKE_TAILS


def _decoded(escape: str) -> str:
    if escape[0] == "u" and len(escape) == 5:
        return chr(int(escape[1:], 16))
    return _JSON_ESCAPES[escape[0]] + escape[1:]


def _math_spans(view: str) -> list[tuple[int, int]]:
    """Where the decoded text is math: between math delimiters, or in a command's `{...}` argument."""
    spans = [m.span() for m in _MATH.finditer(view) if m.lastindex]  # not the `\$` / `\\` alternative
    opened: list[tuple[int, bool]] = []
    for i, char in enumerate(view):
        escaped = i > 0 and view[i - 1] == "\\"
        if char == "{" and not escaped:
            inside = any(is_math for _, is_math in opened)
            opened.append((i, inside or bool(_COMMAND_BEFORE.search(view, max(0, i - 40), i))))
        elif char == "}" and not escaped and opened:
            start, is_math = opened.pop()
            if is_math:
                spans.append((start, i + 1))
    return spans


def _has_other_latex(view: str, doubtful_at: set[int]) -> bool:
    return any(m.start() not in doubtful_at for m in _COMMAND_IN_VIEW.finditer(view))


def _double_backslashes(body: str, offsets: list[int]) -> str:
    if not offsets:
        return body
    parts, done = [], 0
    for offset in offsets:
        parts.append(body[done:offset])
        parts.append("\\")
        done = offset
    parts.append(body[done:])
    return "".join(parts)
