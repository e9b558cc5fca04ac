"""AFM (Agent Foundation Models / Chain-of-Agents) tagged text: parse, validate, render.

- `blocks`: `scan` / `parse_blocks` text -> `Block(tag, text, start, end)`; `make_blocks` lays
  pairs out in AFM's layout (docs/afm_format.md).
- `grammar`: `validate_afm(text, variant)` -> `GrammarVerdict`, `all_violations`, `RULES`.
- `layout`: the whitespace and fences AFM's trainer and format checks depend on.
- `scores`: the reflection and double-check score conventions.
- `render`: `render_single` (string + masked spans) and `render_multiturn` (turns).
"""

from factory.coa.afm.blocks import (
    AFTER_OBSERVATION,
    SEPARATOR,
    TAGS,
    Block,
    Violation,
    make_blocks,
    neutralize_tags,
    parse_blocks,
    scan,
)
from factory.coa.afm.grammar import RULES, GrammarVerdict, all_violations, sequence_violations, validate_afm
from factory.coa.afm.layout import layout_violations
from factory.coa.afm.render import RenderedSingle, render_multiturn, render_single
from factory.coa.afm.scores import (
    double_check_score,
    double_check_text,
    reflection_is_poor,
    reflection_scores,
    reflection_text,
)

__all__ = [
    "AFTER_OBSERVATION",
    "RULES",
    "SEPARATOR",
    "TAGS",
    "Block",
    "GrammarVerdict",
    "RenderedSingle",
    "Violation",
    "all_violations",
    "double_check_score",
    "double_check_text",
    "layout_violations",
    "make_blocks",
    "neutralize_tags",
    "parse_blocks",
    "reflection_is_poor",
    "reflection_scores",
    "reflection_text",
    "render_multiturn",
    "render_single",
    "scan",
    "sequence_violations",
    "validate_afm",
]
