"""Options and overrides the `factory` commands share, in one place.

A command's flags reach its config through one mechanism: they become dotted
`section.field` overrides (`flag_overrides` from argparse flags, `parse_overrides`
from the trainer's `--section.field value` words) set on the config's data
(`set_dotted`) before it is validated again. The LLM options are added here too.
Nothing here imports a stage, so the trainer and every command can use it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import yaml

from .config import StrictModel, validate_config
from .errors import ConfigError

M = TypeVar("M", bound=StrictModel)

# LLMConfig field -> the argparse dest of its flag (add_llm_options)
LLM_FLAGS = {
    "model": "model",
    "base_url": "base_url",
    "api_key_env": "api_key_env",
    "concurrency": "concurrency",
    "max_cost_usd": "max_cost_usd",
    "batch.enabled": "batch",
}


def add_llm_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-c", "--config", help="YAML config file (see README: Configuration)")
    parser.add_argument(
        "--model", help='"local", "local:/path.gguf", a litellm model string, or a name with --base-url'
    )
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--api-key-env", help="environment variable holding the key for --base-url")
    parser.add_argument("--concurrency", type=int, help="requests in flight at once")
    parser.add_argument(
        "--max-cost-usd",
        type=float,
        help="stop sending once the run's recorded spend reaches this many USD (calls in flight finish; the same "
        "command with a higher cap goes on)",
    )
    parser.add_argument(
        "--batch",
        action="store_const",
        const=True,
        help="send requests through the provider's batch API at batch prices (OpenAI, Anthropic; README: Batch mode)",
    )
    parser.add_argument("--run-dir", help="run folder holding the DuckDB store")
    parser.add_argument("--no-cache", action="store_true", help="call the model even for requests already answered")


def add_dry_run_options(parser: argparse.ArgumentParser) -> None:
    """`--dry-run` (factory/cli.py hands such a command to factory.estimate instead of running it)."""
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="send nothing: print per stage the requests, prompt and completion tokens and cost it would take, "
        "from the real prompts (an existing run store is read, not written: what is done is not counted)",
    )
    parser.add_argument("--json", action="store_true", help="with --dry-run: the estimate as JSON")


def flag_overrides(args: argparse.Namespace, fields: Mapping[str, str] | Iterable[str], prefix: str = "") -> dict:
    """`{prefix + field: value}` for each flag given; `fields` maps field -> argparse dest, or names both."""
    pairs = fields.items() if isinstance(fields, Mapping) else ((name, name) for name in fields)
    return {prefix + field: getattr(args, dest) for field, dest in pairs if getattr(args, dest, None) is not None}


def parse_overrides(argv: list[str]) -> dict[str, Any]:
    """`--a.b value` / `--a.b=value` pairs; values are YAML scalars or flow lists."""
    flags: dict[str, Any] = {}
    items = iter(argv)
    for item in items:
        if not item.startswith("--") or len(item) == 2:
            raise ConfigError(f"override '{item}': expected --section.field value")
        key, sep, text = item[2:].partition("=")
        if not sep:
            text = next(items, None)
            if text is None:
                raise ConfigError(f"override --{key}: missing a value")
        try:
            flags[key.replace("-", "_")] = yaml.safe_load(text)
        except yaml.YAMLError:
            raise ConfigError(f"override --{key}: value {text!r} is not valid YAML") from None
    return flags


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    *parents, leaf = key.split(".")
    node = data
    for part in parents:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"override --{key}: '{part}' is not a section")
        node = child
    node[leaf] = value


def with_overrides(base: M, overrides: dict[str, Any], source: str = "command line") -> M:
    """`base` with the dotted overrides set, validated again (a bad value is one line naming `source`)."""
    data = base.model_dump()
    for key, value in overrides.items():
        set_dotted(data, key, value)
    return validate_config(type(base), data, source)
