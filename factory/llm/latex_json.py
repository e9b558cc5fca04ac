"""LaTeX written with single backslashes inside JSON strings, found and repaired.

A model that writes `{"answer": "\\boxed{\\frac{1}{2}}"}` with one backslash each
gets `\\b` (backspace) + "oxed" and `\\f` (form feed) + "rac" from any JSON
decoder, and `\\sqrt`, `\\alpha`, `\\cdot` make the JSON invalid. This module
rewrites the raw reply text before it is parsed, inside string values only
(keys and structure are copied as they are), by doubling the backslash where
LaTeX was meant. A valid escape is changed only on evidence:

- an invalid JSON escape (`\\s`, `\\a`, `\\c`, `\\(`, `\\{`, `\\u` without four
  hex digits ...) can only mean a literal backslash: always repaired, in any field
  (the reply would not parse otherwise);
- a field the schema marks as code (`code_fields`, see structured.code_fields) keeps
  every valid escape as JSON reads it: "\\neq" there is a newline and "eq";
- `\\b`, `\\f`, `\\r` followed by a letter: a backspace, form feed or lone
  carriage return before a word is never meant in prose: repaired;
- `\\n`, `\\t` followed by letters are weighed only when the letter run is a known
  command (`\\nabla`, `\\theta`, `\\text`); "\\nThe" stays a newline. They are
  LaTeX in math (`$...$`, `$$...$$`, `\\(...\\)`, `\\[...\\]`, `\\begin{align*}...`),
  in a command's brace argument (`\\boxed{\\nu}`), or right before `{`, `^`,
  another command (`\\tfrac{`, `\\not\\in`) or `_`. The JSON reading wins where
  what follows is shaped like code (newline + "eq = a[0]", tab + "ext.strip()")
  or the tail can begin text (`\\nu`, `\\ne`, `\\tan`: newline + "u", tab + "an"),
  unless the string holds other LaTeX: then it is ambiguous and the caller re-asks
  (see `Scan.ambiguous`). Any other whole command (`\\theta`, `\\times 3`,
  `\\nabla f`) is LaTeX: tab + "heta" is neither text nor code. Inside a ``` code
  fence (one not tagged latex/tex/math) code shape and text-like tails keep the
  JSON reading even next to LaTeX, and math delimiters there do not count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .latex_commands import LATEX_COMMANDS

_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL)
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[bfnrt][A-Za-z]*|.)", re.DOTALL)
_LETTERS = re.compile(r"[A-Za-z]*")
_COMMAND_IN_VIEW = re.compile(r"\\([A-Za-z]+)")
_COMMAND_BEFORE = re.compile(r"(?:\\[A-Za-z]+|[\^_}])\Z")
# Math in the decoded text: $$...$$, \[...\], \(...\), \begin{env}...\end{env}, and $...$ on one line;
# an escaped `\$` never opens it.
_MATH = re.compile(
    r"\\[$\\]|\$\$(.*?)\$\$|\\\[(.*?)\\\]|\\\((.*?)\\\)|\\begin\{([A-Za-z]+\*?)\}.*?\\end\{\4\}"
    r"|\$((?:\\.|[^$\\\n])*?)\$",
    re.DOTALL,
)
_FENCE = re.compile(r"```([A-Za-z]*)(.*?)(?:```|\Z)", re.DOTALL)
_LATEX_FENCES = frozenset({"latex", "tex", "math", "katex"})
# After newline/tab + a word: an assignment, call, subscript or attribute, as a code line goes on.
_CODE_SHAPE = re.compile(r"[A-Za-z0-9_]*(?:[ \t]*[-+*/%|]?=|\(|\[|\.[A-Za-z_])")
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


@dataclass(frozen=True)
class _Candidate:
    """A valid escape followed by letters that spell a LaTeX command."""

    offset: int  # of its backslash in the raw string body
    at: int  # of its backslash in the view
    command: str  # as LaTeX, e.g. "\\theta"
    always: bool  # \b \f \r: LaTeX wherever the field is not code

    @property
    def end(self) -> int:  # in the view
        return self.at + len(self.command)


def repair_latex_escapes(text: str, code_fields: frozenset[str] = frozenset()) -> Scan:
    """Double the backslash of LaTeX commands in the string values of a JSON text;
    values under a key in `code_fields` keep every valid escape."""
    if "\\" not in text:
        return Scan(text)
    scan = Scan(text)
    out: list[str] = []
    done = 0
    for match, key in _string_values(text):
        body = match.group(1)
        if "\\" not in body:
            continue
        fixed = _repair_string(body, key, key in code_fields, scan)
        if fixed != body:
            out.append(text[done : match.start(1)])
            out.append(fixed)
            done = match.end(1)
    scan.text = "".join(out) + text[done:] if out else text
    return scan


def _string_values(text: str):
    """(match, key) for each string value: the key of the object member it is in,
    an array's strings taking the key the array is under."""
    stack: list[list[str]] = []  # per open container: [kind, its current key]
    done, last_key = 0, ""
    for match in _STRING.finditer(text):
        for char in text[done : match.start()]:
            if char in "{[":
                stack.append([char, "" if char == "{" else (stack[-1][1] if stack else last_key)])
            elif char in "}]" and stack:
                stack.pop()
        done = match.end()
        if text[match.end() : match.end() + 64].lstrip().startswith(":"):
            last_key = match.group(1)
            if stack and stack[-1][0] == "{":
                stack[-1][1] = last_key
            continue
        yield match, stack[-1][1] if stack else last_key


def _repair_string(body: str, key: str, is_code: bool, scan: Scan) -> str:
    """One string literal's raw body: repair the clear cases, weigh the doubtful ones."""
    view, repair_at, candidates = _read_escapes(body, is_code, scan)
    for candidate, verdict in _weigh(view, candidates, bool(repair_at)):
        if verdict == "repair":
            repair_at.append(candidate.offset)
            scan.repaired.append(candidate.command)
        elif verdict == "ambiguous":
            scan.ambiguous.append((key, candidate.command))
    return _double_backslashes(body, sorted(repair_at))


def _read_escapes(body: str, is_code: bool, scan: Scan) -> tuple[str, list[int], list[_Candidate]]:
    """The decoded text with every escape that may be LaTeX shown as LaTeX (the view),
    the offsets of invalid escapes' backslashes (to double), and the candidates."""
    pieces: list[str] = []
    repair_at: list[int] = []
    candidates: list[_Candidate] = []
    done, view_len = 0, 0
    for match in _ESCAPE.finditer(body):
        escape, plain = match.group(1), body[done : match.start()]
        verdict = _classify(escape, is_code)
        if verdict == "repair":
            repair_at.append(match.start())
            scan.repaired.append("\\" + escape + _LETTERS.match(body, match.end()).group())
        elif verdict == "candidate":
            at = view_len + len(plain)
            candidates.append(_Candidate(match.start(), at, "\\" + escape, escape[0] in "bfr"))
        piece = _decoded(escape) if verdict == "keep" else "\\" + escape
        pieces += (plain, piece)
        view_len += len(plain) + len(piece)
        done = match.end()
    pieces.append(body[done:])
    return "".join(pieces), repair_at, candidates


def _classify(escape: str, is_code: bool) -> str:
    """ "keep", "repair" (invalid JSON: only a backslash fits) or "candidate" for one escape."""
    first = escape[0]
    if first == "u" and len(escape) == 5:
        return "keep"  # a real \uXXXX escape (the pattern takes four hex digits or none)
    if first in "bfnrt":
        if len(escape) == 1 or is_code:
            return "keep"  # whitespace before a non-letter ("\n\n", "\t1"), or code as JSON reads it
        if first in "bfr" or escape in LATEX_COMMANDS:
            return "candidate"
        return "keep"
    return "keep" if first in '"\\/' else "repair"


def _weigh(view: str, candidates: list[_Candidate], repaired_any: bool) -> list[tuple[_Candidate, str]]:
    """("repair" | "keep" | "ambiguous") for each candidate, from what surrounds it in the view."""
    if not candidates:
        return []
    fences = _code_fences(view)
    math = [span for span in _math_spans(view) if not _inside(span[0], fences)]
    decided: dict[_Candidate, str] = {}
    for c in candidates:
        if c.always or _inside(c.at, math) or _latex_follows(view, c.end):
            decided[c] = "repair"
    undecided = {c.at for c in candidates if c not in decided}
    has_latex = repaired_any or bool(decided) or _known_command_outside(view, undecided)
    for c in candidates:
        if c in decided:
            continue
        in_fence = _inside(c.at, fences)
        doubt = "ambiguous" if has_latex and not in_fence else "keep"
        if _CODE_SHAPE.match(view, c.end):
            decided[c] = doubt  # newline + "eq = a[0]": a code line
        elif in_fence:
            decided[c] = "keep"
        elif view.startswith("_", c.end):
            decided[c] = "repair"  # \nu_1 not followed by code shape
        elif _tail_can_begin_text(c.command):
            decided[c] = doubt
        else:
            decided[c] = "repair"  # tab + "heta", newline + "abla f": no text, no code
    return [(c, decided[c]) for c in candidates]


def _latex_follows(view: str, end: int) -> bool:
    """`{`, `^` or another command right after: only LaTeX goes on like that."""
    after = view[end : end + 2]
    return after[:1] in ("{", "^") or (after[:1] == "\\" and len(after) == 2 and not after[1].isspace())


def _tail_can_begin_text(command: str) -> bool:
    tail = command[2:]
    return len(tail) <= 1 or tail in _TEXTLIKE_TAILS


def _inside(at: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= at < end for start, end in spans)


def _code_fences(view: str) -> list[tuple[int, int]]:
    return [m.span() for m in _FENCE.finditer(view) if m.group(1).lower() not in _LATEX_FENCES]


def _known_command_outside(view: str, skip: set[int]) -> bool:
    """Another LaTeX command in the string: written doubled, or decided above."""
    return any(m.start() not in skip and m.group(1) in LATEX_COMMANDS for m in _COMMAND_IN_VIEW.finditer(view))


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
