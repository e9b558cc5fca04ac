"""Validate an AFM completion: `validate_afm(text, variant)` -> the first rule it breaks.

Two variants, after the prompts of Agent Foundation Models (OPPO Chain-of-Agents):

* ``mas`` — the web agent distilled from a multi-agent run. Its prompt: think
  before each plan, web_search, crawl_page, code, reflection, suggested_answer
  and double_check; a reflection rating any criterion poor leads to a re-plan;
  after suggested_answer only double_check; a double-check score >= 3 leads to
  the answer, <= 2 to a re-plan. Choices where that prompt is loose or
  disagrees with itself:
  - think before plan holds for the first plan too, so a mas completion opens
    with think, plan (`plan_first` names a wrong first function, `think_before`
    a missing think);
  - think before answer is allowed, not required: one version of the prompt
    lists answer among the functions needing a think and its "function
    association" list does not, and DESIGN.md leaves it out;
  - the answer comes only right after (a think after) a double check scoring
    >= 3 (`answer_after_double_check`), and a double check only after a
    suggested answer (`orphan_double_check`);
  - two thinks in a row are refused (`consecutive_think`): a think is the
    reasoning for the one function after it;
  - a reflection without score lines is not poor; a double check without a
    readable score breaks `double_check_score` (conventions: `scores.py`).
* ``code`` — the math / code agent of the parquet task prompts, exactly
  ``plan, (think, code, observation, reflection)*N, think, answer`` with N >= 0
  ("Single 'plan' function only, output as the first function"). The answer is
  ``\\boxed{...}`` for math (`answer_format="boxed"`, the default) or a
  ```` ```py ```` block for LiveCodeBench (`"python"`), or unchecked (`"any"`);
  mas answers are short free text and `answer_format` does not apply to them.

Both variants are also held to AFM's layout (`layout.py`): observations as
AFM's trainer needs them to be masked, code in AFM's fences. The ``code``
variant carries none of the web agent's reflection score lines and no
``\\boxed{}`` outside its answer (`reflection_scores`, `boxed_outside_answer`).

Structural problems (from `blocks.scan`) come first, then the layout ones:
when the text is not a clean sequence of blocks, the order of the blocks means little. Otherwise the
violation with the lowest block index wins, ties going to the rule listed
first in `RULES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from factory.coa.afm.blocks import Block, Violation, scan
from factory.coa.afm.layout import layout_violations
from factory.coa.afm.sequence import code_violations, mas_violations

Variant = Literal["mas", "code"]
AnswerFormat = Literal["boxed", "python", "any"]

RULES: dict[str, str] = {
    "unclosed": "an opening tag has no closing tag",
    "nested": "a block opens inside another block",
    "stray_close": "a closing tag with no open block",
    "unknown_tag": "a tag outside the AFM tag set, between blocks",
    "tag_in_text": "an AFM tag string inside a block's text",
    "free_text": "non-blank text between blocks",
    "observation_layout": "an observation not written \\n<observation>\\n...\\n</observation>\\n\\n",
    "observation_marker": "'<observation' in the model's text, or 'observation>' inside an observation",
    "code_fence": "a <code> body not in AFM's ```py (then optional ```sh stdin) fence layout",
    "empty": "no blocks at all",
    "empty_block": "a block (other than an observation) with blank text",
    "tag_not_allowed": "a tag the variant does not use",
    "plan_first": "the first function (after an optional think) is not a plan",
    "consecutive_think": "two think blocks in a row",
    "think_before": "a function that needs a think right before it has none",
    "observation_after_tool": "a tool call not followed by an observation",
    "orphan_observation": "an observation that does not follow a tool call",
    "code_sequence": "the code variant's plan, (think, code, observation, reflection)*N, think, answer is broken",
    "reflection_scores": "a code-variant reflection with the web agent's score lines",
    "think_scores": "a code-variant think or reflection quoting a verifier's n/4 score",
    "boxed_outside_answer": "a code-variant \\boxed{...} outside the <answer>",
    "after_suggested_answer": "a suggested answer not followed by a double check",
    "orphan_double_check": "a double check that does not follow a suggested answer",
    "replan_after_poor": "a reflection rated poor not followed by a new plan",
    "double_check_score": "a double check without a readable 1-4 score",
    "double_check_outcome": "a double check <= 2 not followed by a plan, or >= 3 not followed by the answer",
    "answer_after_double_check": "an answer that does not follow a double check",
    "ends_with_answer": "the last block is not the answer",
    "boxed_answer": "the answer holds no \\boxed{...}",
    "code_answer": "the answer holds no ```py code block",
}
_PRIORITY = {rule: rank for rank, rule in enumerate(RULES)}


@dataclass(frozen=True)
class GrammarVerdict:
    ok: bool
    rule: str | None = None
    message: str = ""
    block_index: int | None = None

    @classmethod
    def of(cls, violation: Violation | None) -> GrammarVerdict:
        if violation is None:
            return cls(ok=True)
        return cls(False, violation.rule, violation.message, violation.block_index)


def validate_afm(text: str, variant: Variant = "mas", answer_format: AnswerFormat = "boxed") -> GrammarVerdict:
    """The first violation of `text` (see the module docstring for the order), or ok."""
    violations = all_violations(text, variant, answer_format)
    return GrammarVerdict.of(violations[0] if violations else None)


def all_violations(text: str, variant: Variant = "mas", answer_format: AnswerFormat = "boxed") -> list[Violation]:
    """Every violation found: structural ones in text order, then the sequence ones by block."""
    scanned = scan(text)
    layout = layout_violations(text, scanned.blocks)
    return scanned.violations + layout + sequence_violations(scanned.blocks, variant, answer_format)


def sequence_violations(
    blocks: list[Block], variant: Variant = "mas", answer_format: AnswerFormat = "boxed"
) -> list[Violation]:
    """The order rules alone, for blocks already parsed (or built by the factory)."""
    if variant not in ("mas", "code"):
        raise ValueError(f"variant must be 'mas' or 'code', not {variant!r}")
    if not blocks:
        return [Violation("empty", "no AFM blocks in the text", 0)]
    found = mas_violations(blocks) if variant == "mas" else code_violations(blocks, answer_format)
    return sorted(found, key=lambda v: (v.block_index, _PRIORITY[v.rule]))
