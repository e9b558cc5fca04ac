"""Pull the part of a model's reply that is the answer: <answer> spans, \\boxed{}, code fences."""

from __future__ import annotations

import re

ANSWER_SPAN = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
CODE_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.DOTALL)
PYTHON_FENCES = frozenset({"python", "py", "python3", ""})


def final_answer(prediction: str) -> str:
    """The last <answer>...</answer> span (AFM), else the whole reply."""
    spans = ANSWER_SPAN.findall(prediction or "")
    return (spans[-1] if spans else prediction or "").strip()


def last_boxed(text: str) -> str | None:
    """The content of the last \\boxed{...} (nested braces balanced), or None."""
    starts = [match.end() for match in BOXED.finditer(text or "")]
    for start in reversed(starts):
        content = balanced(text, start)
        if content is not None:
            return content.strip()
    return None


def balanced(text: str, start: int) -> str | None:
    """text[start:] up to the brace that closes the one just before `start`."""
    depth = 1
    for index in range(start, len(text)):
        char = text[index]
        escaped = text[index - 1] == "\\"  # \{ and \} are literal braces in LaTeX, not grouping
        if char == "{" and not escaped:
            depth += 1
        elif char == "}" and not escaped:
            depth -= 1
            if depth == 0:
                return text[start:index]
    return None


def python_code(prediction: str) -> str:
    """The program a reply answers with. With an <answer> span, AFM's rule: the python
    (or unlabeled) blocks of the last span, joined by a blank line, or the span itself
    (verl/verl/tools/utils/code_executors/utils.py, extract_last_code_from_string); a
    ```sh block there is sample input, not code. Without one, the last python block of
    the reply, or the whole reply."""
    spans = ANSWER_SPAN.findall(prediction or "")
    if spans:
        blocks = python_blocks(spans[-1])
        return "\n\n".join(block.strip("\n") for block in blocks) + "\n" if blocks else spans[-1].strip()
    blocks = python_blocks(prediction or "")
    return blocks[-1] if blocks else (prediction or "").strip()


def python_blocks(text: str) -> list[str]:
    return [code for lang, code in CODE_FENCE.findall(text) if lang.lower() in PYTHON_FENCES]
