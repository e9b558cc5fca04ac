"""The whitespace and fences of AFM text, checked where AFM's own code depends on them.

AFM's trainer (the LLaMA-Factory fork's `ignore_observation`) masks from the
tokens of `<observation` to those of `observation>\\n\\n` and drops a row whose
span never closes; its RL format check (`check_code_format_correctness`) wants
each `<code>` to hold one ```` ```py\\n ... ```\\n ```` block and at most one
```` ```sh\\n ... ```\\n ```` stdin block after it. So:

* `observation_layout`: an observation is written `\\n<observation>\\n...\\n</observation>\\n\\n`
  and the blank line is followed by the next block, not by more whitespace;
* `observation_marker`: `<observation` in text the model writes would open a
  masked span; `observation>` inside an observation would close it early
  (tool output goes through `blocks.neutralize_tags`, which escapes both);
* `code_fence`: a code block is not in AFM's fence layout.

docs/afm_format.md has the layout and the AFM files it comes from.
"""

from __future__ import annotations

import re

from factory.coa.afm.blocks import Block, Violation

# The body of <code> as AFM writes it: a ```py block, then optionally a ```sh block with the stdin.
CODE_BODY = re.compile(r"\n```py\n(?:(?!```\n).)*?\n```\n(?:```sh\n(?:(?!```\n).)*?```\n)?", re.DOTALL)


def layout_violations(text: str, blocks: list[Block]) -> list[Violation]:
    found = []
    for i, block in enumerate(blocks):
        if block.tag == "observation":
            found += _observation(text, block, i)
        elif "<observation" in block.text:
            found.append(Violation("observation_marker", f"<{block.tag}> holds '<observation'", i, block.start))
        if block.tag == "code" and not CODE_BODY.fullmatch(block.text):
            message = "<code> must hold \\n```py\\n...\\n```\\n (then optionally ```sh\\n...```\\n for stdin)"
            found.append(Violation("code_fence", message, i, block.start))
    return found


def _observation(text: str, block: Block, index: int) -> list[Violation]:
    if "observation>" in block.text:
        return [Violation("observation_marker", "'observation>' inside an <observation>", index, block.start)]
    after = text[block.end : block.end + 3]
    closed = after.startswith("\n\n") and not after[2:].isspace()  # exactly one blank line, then the next block
    framed = block.text.startswith("\n") and block.text.endswith("\n") and len(block.text) >= 2
    if text[block.start - 1 : block.start] != "\n" or not framed or not closed:
        message = "an observation must be written \\n<observation>\\n...\\n</observation>\\n\\n before the next block"
        return [Violation("observation_layout", message, index, block.start)]
    return []
