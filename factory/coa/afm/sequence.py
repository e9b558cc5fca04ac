"""The order rules over a list of blocks, one small check per rule (see grammar.py).

Each check returns the violations it finds; `grammar.sequence_violations`
sorts them. Block indices point at the block that is wrong or missing:
`len(blocks)` means "after the last block".
"""

from __future__ import annotations

import re

from factory.checks.extract import BOXED, last_boxed
from factory.coa.afm.blocks import Block, Violation
from factory.coa.afm.scores import double_check_score, reflection_is_poor, reflection_scores
from factory.coa.tools.registry import tool_tags

_NEEDS_THINK = {
    "mas": {"plan", *tool_tags(), "reflection", "suggested_answer", "double_check"},
    "code": {"code", "answer"},  # the code prompts: "Call 'think' before any 'code' or 'answer' function"
}

# The code variant as a transition table: which tags may follow each tag (None: the start).
_CODE_NEXT = {
    None: ("plan",),
    "plan": ("think",),
    "think": ("code", "answer"),
    "code": ("observation",),
    "observation": ("reflection",),
    "reflection": ("think",),
    "answer": (),
}
_PY_FENCE = re.compile(r"```(?:py|python)[ \t]*\n.*?```", re.DOTALL)


def mas_violations(blocks: list[Block]) -> list[Violation]:
    tags = [b.tag for b in blocks]
    return [
        *_empty_blocks(blocks),
        *_plan_first(tags),
        *_consecutive_think(tags),
        *_think_before(tags, _NEEDS_THINK["mas"]),
        *_tool_then_observation(tags),
        *_after_suggested_answer(tags),
        *_replan_after_poor(blocks, tags),
        *_double_check_outcome(blocks, tags),
        *_answer_after_double_check(tags),
        *_ends_with_answer(tags),
    ]


# A verifier's 1-4 double-check score quoted in prose ("score 4/4"): the code agent has no verifier.
VERIFIER_SCORE = re.compile(r"\bscore:?\s*[1-4]\s*/\s*4\b", re.I)


def code_violations(blocks: list[Block], answer_format: str) -> list[Violation]:
    tags = [b.tag for b in blocks]
    return [*_empty_blocks(blocks), *_code_order(tags), *_code_texts(blocks), *_answer_format(blocks, answer_format)]


def _code_texts(blocks: list[Block]) -> list[Violation]:
    """What the code agent never writes: the web agent's score lines, a boxed answer before <answer>."""
    found = []
    for i, block in enumerate(blocks):
        if block.tag == "reflection" and reflection_scores(block.text):
            found.append(Violation("reflection_scores", "a code-agent reflection carries score lines", i))
        if block.tag in ("think", "reflection") and VERIFIER_SCORE.search(block.text):
            found.append(Violation("think_scores", f"a code-agent <{block.tag}> quotes a verifier score", i))
        if block.tag not in ("answer", "observation") and BOXED.search(block.text):
            found.append(Violation("boxed_outside_answer", f"\\boxed{{}} in <{block.tag}>", i))
    return found


def _next_non_think(tags: list[str], i: int) -> int:
    """Index of the first non-think block after i (len(tags) when there is none)."""
    j = i + 1
    while j < len(tags) and tags[j] == "think":
        j += 1
    return j


def _prev_non_think(tags: list[str], i: int) -> int | None:
    j = i - 1
    while j >= 0 and tags[j] == "think":
        j -= 1
    return j if j >= 0 else None


def _tag_at(tags: list[str], i: int | None) -> str | None:
    return tags[i] if i is not None and i < len(tags) else None


def _empty_blocks(blocks: list[Block]) -> list[Violation]:
    # An empty observation is a real tool result (code that prints nothing); the rest is the model's.
    return [
        Violation("empty_block", f"<{b.tag}> is blank", i)
        for i, b in enumerate(blocks)
        if b.tag != "observation" and not b.text.strip()
    ]


def _plan_first(tags: list[str]) -> list[Violation]:
    first = _next_non_think(tags, -1)
    if _tag_at(tags, first) == "plan":
        return []
    found = f"<{tags[first]}>" if first < len(tags) else "nothing"
    return [Violation("plan_first", f"the first function must be <plan>, not {found}", first)]


def _consecutive_think(tags: list[str]) -> list[Violation]:
    return [
        Violation("consecutive_think", "two <think> blocks in a row", i)
        for i in range(1, len(tags))
        if tags[i] == tags[i - 1] == "think"
    ]


def _think_before(tags: list[str], needs_think: set[str]) -> list[Violation]:
    return [
        Violation("think_before", f"<{tag}> must come right after a <think>", i)
        for i, tag in enumerate(tags)
        if tag in needs_think and (i == 0 or tags[i - 1] != "think")
    ]


def _tool_then_observation(tags: list[str]) -> list[Violation]:
    found, tools = [], tool_tags()
    for i, tag in enumerate(tags):
        if tag in tools and _tag_at(tags, i + 1) != "observation":
            found.append(Violation("observation_after_tool", f"<{tag}> must be followed by <observation>", i + 1))
        if tag == "observation" and (i == 0 or tags[i - 1] not in tools):
            found.append(Violation("orphan_observation", "<observation> must follow a tool call", i))
    return found


def _after_suggested_answer(tags: list[str]) -> list[Violation]:
    found = []
    for i, tag in enumerate(tags):
        if tag == "suggested_answer" and _tag_at(tags, _next_non_think(tags, i)) != "double_check":
            message = "after <suggested_answer> only <think>, <double_check> may follow"
            found.append(Violation("after_suggested_answer", message, _next_non_think(tags, i)))
        if tag == "double_check" and _tag_at(tags, _prev_non_think(tags, i)) != "suggested_answer":
            found.append(Violation("orphan_double_check", "<double_check> must follow a <suggested_answer>", i))
    return found


def _replan_after_poor(blocks: list[Block], tags: list[str]) -> list[Violation]:
    found = []
    for i, block in enumerate(blocks):
        if block.tag == "reflection" and reflection_is_poor(block.text):
            after = _next_non_think(tags, i)
            if _tag_at(tags, after) != "plan":
                found.append(Violation("replan_after_poor", "a reflection rated poor must lead to a new <plan>", after))
    return found


def _double_check_outcome(blocks: list[Block], tags: list[str]) -> list[Violation]:
    found = []
    for i, block in enumerate(blocks):
        if block.tag != "double_check":
            continue
        score = double_check_score(block.text)
        if score is None:
            found.append(Violation("double_check_score", "<double_check> has no 'score: N' line (N in 1-4)", i))
            continue
        expected = "plan" if score <= 2 else "answer"
        after = _next_non_think(tags, i)
        if _tag_at(tags, after) != expected:
            message = f"a double check scoring {score} must lead to <{expected}>"
            found.append(Violation("double_check_outcome", message, after))
    return found


def _answer_after_double_check(tags: list[str]) -> list[Violation]:
    return [
        Violation("answer_after_double_check", "<answer> must follow a <double_check> scoring >= 3", i)
        for i, tag in enumerate(tags)
        if tag == "answer" and _tag_at(tags, _prev_non_think(tags, i)) != "double_check"
    ]


def _ends_with_answer(tags: list[str]) -> list[Violation]:
    if "answer" not in tags:
        return [Violation("ends_with_answer", "no <answer> block at the end", len(tags))]
    after = tags.index("answer") + 1
    if after < len(tags):
        return [Violation("ends_with_answer", f"<{tags[after]}> after the <answer>", after)]
    return []


def _code_order(tags: list[str]) -> list[Violation]:
    """Walk the transition table; past the first wrong step the rest says little, so stop."""
    previous = None
    for i, tag in enumerate(tags):
        if tag not in _CODE_NEXT[previous]:
            return [Violation(_code_rule(previous, tag), f"<{tag}> cannot follow {previous or 'the start'}", i)]
        previous = tag
    return [] if previous == "answer" else [Violation("ends_with_answer", "no <answer> at the end", len(tags))]


def _code_rule(previous: str | None, tag: str) -> str:
    """Name the broken step after the most specific rule it breaks."""
    if tag not in _CODE_NEXT:
        return "tag_not_allowed"
    if previous is None:
        return "plan_first"
    if previous == "answer":
        return "ends_with_answer"
    if previous == "code":
        return "observation_after_tool"
    if tag == "observation":
        return "orphan_observation"
    if previous == tag == "think":
        return "consecutive_think"
    return "think_before" if tag in _NEEDS_THINK["code"] else "code_sequence"


def _answer_format(blocks: list[Block], answer_format: str) -> list[Violation]:
    answers = [(i, b) for i, b in enumerate(blocks) if b.tag == "answer"]
    if not answers or answer_format == "any":
        return []
    index, answer = answers[0]
    if answer_format == "boxed" and last_boxed(answer.text) is None:
        return [Violation("boxed_answer", "the answer must hold \\boxed{...}", index)]
    if answer_format == "python" and not _PY_FENCE.search(answer.text):
        return [Violation("code_answer", "the answer must hold a ```py ... ``` block", index)]
    return []
