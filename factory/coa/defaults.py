"""The coa settings left `None` (auto), resolved by the run's model, as refine's `scripts: auto`.

    settings = resolve_coa(config.coa, config.llm)       # every auto field set
    llm = coa_llm(config.llm, settings)                  # the run's LLM config with coa's token caps

The embedded model (SmolLM2-135M on a few CPU cores) fills a constrained string to its
bound and, cut off, is retried with twice the tokens: with the full-model bounds one
code-agent call ran 237 s and `factory coa --count 3` took 495 s (issue 15). Its auto
settings are the ones benchmarks/coa_yield.py measured (about 50 s per kept trajectory);
any other model keeps the paper-sized ones. An explicit value always wins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..llm import LLMConfig

if TYPE_CHECKING:  # annotations only: config.py reads the reply defaults from here
    from .config import CoaConfig

EMBEDDED = {"max_steps": 2, "max_replans": 1, "max_tokens": 512, "max_tokens_cap": 1024, "task_timeout_s": 600.0,
            "max_tokens_per_task": 60_000, "history_chars": 6000}  # fmt: skip
# A hard task worked one plan step per call: 5-20 calls (AFM's trajectories), each prompt carrying the work so far.
OTHER = {"max_steps": 20, "max_replans": 3, "max_tokens": None, "max_tokens_cap": None, "task_timeout_s": 900.0,
         "max_tokens_per_task": 400_000, "history_chars": 24_000}  # fmt: skip
EMBEDDED_REPLY = {"think": 240, "code": 400, "answer": 120, "comment": 160, "plan_steps": 3}
OTHER_REPLY = {"think": 800, "code": 3000, "answer": 4000, "comment": 600, "plan_steps": 12}


def is_embedded(llm: LLMConfig) -> bool:
    """The embedded llama.cpp model: "local" or "local:/path.gguf" (not a model named with base_url)."""
    model = (llm.model or "local").strip()
    return model == "local" or model.startswith("local:")


def reply_defaults(embedded: bool) -> dict[str, int]:
    return dict(EMBEDDED_REPLY if embedded else OTHER_REPLY)


def auto_values(llm: LLMConfig | None) -> dict[str, Any]:
    """The auto value of each field for this run's model (None llm: a model other than the embedded one)."""
    embedded = llm is not None and is_embedded(llm)
    values = dict(EMBEDDED if embedded else OTHER)
    run = llm or LLMConfig()
    if embedded:  # a ceiling: an llm section asking for fewer tokens keeps its figures
        values["max_tokens"] = min(values["max_tokens"], run.max_tokens)
        values["max_tokens_cap"] = min(values["max_tokens_cap"], run.max_tokens_cap)
    else:  # the run's own caps: a real model's replies are not padded to their bound
        values["max_tokens"], values["max_tokens_cap"] = run.max_tokens, run.max_tokens_cap
    return values


def resolve_coa(settings: CoaConfig, llm: LLMConfig | None = None) -> CoaConfig:
    """`settings` with every auto (None) field set for `llm`'s model; set fields are kept."""
    embedded = llm is not None and is_embedded(llm)
    update = {name: value for name, value in auto_values(llm).items() if getattr(settings, name) is None}
    return settings.model_copy(update={**update, "reply_chars": settings.reply_chars.resolved(embedded)})


def auto_chosen(settings: CoaConfig, resolved: CoaConfig) -> dict[str, Any]:
    """The fields auto chose a value for (the reply bounds flattened as reply_chars.<role>)."""
    chosen = {name: getattr(resolved, name) for name in EMBEDDED if getattr(settings, name) is None}
    for name, value in resolved.reply_chars.model_dump().items():
        if getattr(settings.reply_chars, name) is None:
            chosen[f"reply_chars.{name}"] = value
    return chosen


def describe_auto(chosen: dict[str, Any], llm: LLMConfig) -> str | None:
    """One line naming what auto chose, for the embedded model only (the others keep the paper's sizes)."""
    if not chosen or not is_embedded(llm):
        return None
    shown = ", ".join(
        f"{name} {value:g}" if isinstance(value, float) else f"{name} {value}" for name, value in chosen.items()
    )
    return f"coa: auto settings for the embedded model: {shown} (set coa.<field> to change)"


def coa_llm(llm: LLMConfig, resolved: CoaConfig) -> LLMConfig:
    """The run's LLM config with coa's resolved token caps (roles with their own model keep them too)."""
    return llm.model_copy(update={"max_tokens": resolved.max_tokens, "max_tokens_cap": resolved.max_tokens_cap})
