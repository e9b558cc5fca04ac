"""The one declaration of each Chain-of-Agents tool; every list of tools is derived from it.

A tool is one module in this package that ends with a `SPEC = ToolSpec(...)`, plus its two
prompt lines (prompts/coa/tools/<name>.md for the agents, prompts/coa/afm_tools/<name>.md for
the distilled AFM instruction). From the specs come: the AFM tool tags the grammar and the
store's `tool_inputs` read (`tool_tags`), the `coa.tools` config sections (`ToolsConfig`), the
toolbox's tools (`ToolSpec.build`), the tool agent's schema text (`argument`), which variant's
tool agent is offered the tool (`variants`, `on_request`: offered there only with
`coa.mas_code`), the names imported agent logs use for it (`aliases`) and the tool kwargs of RL
exports (`rl_domains`). Before this registry, adding a tool touched seven source files.

    for spec in specs(): ...            # in declaration order (`order`)
    tool_tags()                         # ("web_search", "crawl_page", "code")
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ...llm import LLMClient
    from .base import Tool
    from .search import LocalSearchBackend


DECLARATION = "\nSPEC = ToolSpec("  # how a tool module declares itself


@dataclass(frozen=True)
class BuildContext:
    """What a tool may need to be built, besides its own config section."""

    corpus: LocalSearchBackend | None = None  # the local corpus, opened once per toolbox
    summarizer: LLMClient | None = None  # the client crawl_page summarises pages with
    config: Any = None  # the whole ToolsConfig


@dataclass(frozen=True)
class ToolSpec:
    name: str  # the AFM tag, the name agents call it by, and its section under coa.tools
    config: type  # the pydantic model of that section (a StrictModel with an `enabled` field)
    build: Callable[[Any, BuildContext], Tool]  # (its config section, context) -> the tool; called when enabled
    argument: str  # what the argument is, in the tool agent's reply schema
    variants: tuple[str, ...]  # the variants whose tool agent is offered it ("mas", "code")
    on_request: tuple[str, ...] = ()  # variants that offer it only with coa.mas_code
    aliases: tuple[str, ...] = ()  # its names in imported agent logs (OpenAI tool calling, smolagents)
    rl_domains: tuple[str, ...] = ()  # task domains whose RL rows get it in tools_kwargs (verl export)
    order: int = 100  # position in every list (the AFM prompt's tool lines, the grammar's tags)
    parameter: str = "input"  # the argument's name when the tool is offered as a native function (export/native.py)


@lru_cache(maxsize=None)
def specs() -> tuple[ToolSpec, ...]:
    """Every declared tool: the `SPEC` of each module of this package, in `order`."""
    found = []
    for folder in importlib.import_module(__package__).__path__:
        for path in sorted(Path(folder).glob("*.py")):
            # Only the modules that declare a tool are imported (the others may read ToolsConfig, built from these).
            if DECLARATION in path.read_text(encoding="utf-8"):
                spec = getattr(importlib.import_module(f"{__package__}.{path.stem}"), "SPEC", None)
                found += [spec] if isinstance(spec, ToolSpec) else []
    return tuple(sorted(found, key=lambda spec: (spec.order, spec.name)))


def spec(name: str) -> ToolSpec | None:
    return next((found for found in specs() if found.name == name), None)


@lru_cache(maxsize=None)
def tool_tags() -> tuple[str, ...]:
    """The AFM tags whose body is a tool's input, each answered by an <observation>."""
    return tuple(found.name for found in specs())


def offered_for(variant: str, extra: bool) -> tuple[str, ...]:
    """The tools a variant's tool agent may be offered (`extra`: coa.mas_code, the on-request ones too)."""
    return tuple(s.name for s in specs() if variant in s.variants or (extra and variant in s.on_request))


def alias_names() -> dict[str, str]:
    """Every name an imported log may call a tool by -> the tool's AFM name."""
    return {alias: found.name for found in specs() for alias in (found.name, *found.aliases)}


def rl_tools(domain: str) -> tuple[str, ...]:
    """The tools an RL row of this task domain is offered (verl's tools_kwargs)."""
    return tuple(found.name for found in specs() if domain in found.rl_domains)
