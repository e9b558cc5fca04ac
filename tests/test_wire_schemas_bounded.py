"""Every schema sent to an LLM bounds each string it asks for.

Under constrained decoding a small model can keep writing inside an unbounded
string until max_tokens cuts the reply off, so every request fails the same way.
"""

import re

import pytest
from test_refine_world import GARDEN

from factory.checks.judge import JudgeVerdict
from factory.coa.config import ReplyLimits
from factory.coa.roles import Answerer, CodeAgent, Planner, Reflector, SearchAgent, Verifier, bounded_reply
from factory.coa.tools.summary import summary_model
from factory.llm.structured import output_spec
from factory.personas.expand import RelatedPersonas
from factory.refine.schemas import trajectory_schema
from factory.refine.script import DeclarativeScriptDraft, Script, ScriptDraft
from factory.smoke.job import ToolIdea


def unbounded_strings(node, path=""):
    if isinstance(node, list):
        return [p for i, item in enumerate(node) for p in unbounded_strings(item, f"{path}[{i}]")]
    if not isinstance(node, dict):
        return []
    free = False
    if node.get("type") == "string" and not any(k in node for k in ("enum", "const")):
        # llama.cpp's grammar ignores maxLength beside a pattern: then the pattern alone must be bounded.
        free = not _bounded_pattern(node["pattern"]) if node.get("pattern") else "maxLength" not in node
    return ([path] if free else []) + [p for k, v in node.items() for p in unbounded_strings(v, f"{path}/{k}")]


def _bounded_pattern(pattern):
    """An anchored pattern with no open repeat (`*`, `+`, `{n,}`) matches strings of bounded length."""
    open_repeat = set("*+") & set(pattern) or re.search(r"\{\d*,\}", pattern)
    return pattern.startswith("^") and pattern.endswith("$") and not open_repeat


WEB_TOOLS = ("web_search", "crawl_page")
COA_REPLIES = [
    bounded_reply(role.reply_type, ReplyLimits(), tools)
    for role, tools in [(Planner, ()), (SearchAgent, WEB_TOOLS), (SearchAgent, (*WEB_TOOLS, "code")),
                        (CodeAgent, ("code",)), (Reflector, ()), (Answerer, ()), (Verifier, ())]
]  # fmt: skip
# crawl_page's page-summary reply, at the summarizer's default bound
MODELS = [ScriptDraft, DeclarativeScriptDraft, JudgeVerdict, RelatedPersonas, ToolIdea, *COA_REPLIES,
          summary_model(1200)]  # fmt: skip


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_response_models_bound_every_string(model):
    assert unbounded_strings(output_spec(model).schema) == []


def test_trajectory_schema_bounds_every_string():
    assert unbounded_strings(trajectory_schema(Script.model_validate(GARDEN))) == []


def test_the_check_sees_an_unbounded_list_item_or_pattern():
    schema = {
        "type": "object",
        "properties": {
            "xs": {"type": "array", "items": {"type": "string"}},
            "name": {"type": "string", "pattern": "^[a-z]+$"},
            "code": {"type": "string", "pattern": "^[a-z]{1,8}$"},
            "capped": {"type": "string", "pattern": "^[a-z]*$", "maxLength": 8},  # llama.cpp ignores maxLength here
            "open": {"type": "string", "pattern": "^[a-z]{2,}$"},
        },
    }
    assert unbounded_strings(schema) == [
        "/properties/xs/items",
        "/properties/name",
        "/properties/capped",
        "/properties/open",
    ]
