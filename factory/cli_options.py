"""Options and overrides the `factory` commands share, in one place.

A command's flags reach its config through one mechanism: they become dotted
`section.field` overrides (`flag_overrides` from argparse flags, `parse_overrides`
from the trainer's `--section.field value` words) set on the config's data
(`set_dotted`) before it is validated again. The LLM options are added here too.
Nothing here imports a stage, so the trainer and every command can use it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, TypeVar

from .errors import ConfigError

if TYPE_CHECKING:
    from .config import StrictModel

# yaml and pydantic (factory.config) are imported where a value is parsed: `factory --help` builds
# its parser from this module and should not pay for them.
M = TypeVar("M", bound="StrictModel")

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
    """The LLM flags, -c, and the optional RUN_DIR (default: the config's run_dir, else outputs/<command>)."""
    default = f"outputs/{parser.prog.split()[-1]}"
    add_run_folder(
        parser, f"the run folder holding the DuckDB store (default: run_dir in the -c config, else {default})"
    )
    parser.set_defaults(run_dir_default=default)
    parser.add_argument("-c", "--config", help="YAML config file (see docs/config.md)")
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
        help="send requests through the provider's batch API at batch prices (OpenAI, Anthropic; docs/batch.md)",
    )
    parser.add_argument("--no-cache", action="store_true", help="call the model even for requests already answered")


def add_run_folder(parser: argparse.ArgumentParser, help: str, required: bool = False, usage: str = "") -> None:
    """RUN_DIR, the first word after the command, as every command that takes a run folder spells it; the old
    `--run-dir DIR` is still accepted for a release (not in --help; `run_folder_of` prints a note)."""
    parser.add_argument("run_folder", metavar="RUN_DIR", nargs=None if required else "?", help=help)
    parser.add_argument("--run-dir", dest="old_run_dir", help=argparse.SUPPRESS)
    parser.set_defaults(run_folder_usage=usage or f"{parser.prog} RUN_DIR ...")


def run_folder_of(args: argparse.Namespace) -> str | None:
    """The run folder given on the command line (RUN_DIR, or the old --run-dir with a note), or None."""
    folder, old = getattr(args, "run_folder", None), getattr(args, "old_run_dir", None)
    if old is None:
        return folder
    usage = getattr(args, "run_folder_usage", "RUN_DIR first")
    if folder is not None and Path(folder) != Path(old):
        raise ConfigError(f"two run folders given: {folder} and --run-dir {old}; give it once, first: {usage}")
    note(f"--run-dir is the old form (accepted for this release); write the run folder first: {usage}")
    return old


def run_folder_and_file(args: argparse.Namespace, default: str) -> tuple[str, str]:
    """`factory import RUN_DIR FILE` (and coa-import); the old `FILE [--run-dir DIR]` works for a release."""
    if args.path is not None:
        return run_folder_of(args) or default, args.path
    if args.old_run_dir is None:  # one word: the old form's FILE, into the old default folder
        note(f"the run folder now comes first: {args.run_folder_usage}; importing into {default}")
    return run_folder_of(argparse.Namespace(**{**vars(args), "run_folder": None})) or default, args.run_folder


def run_folder_first_usage(parser: argparse.ArgumentParser) -> None:
    """`usage: factory CMD RUN_DIR ... [options]` for a command whose first word is its run folder, so --help
    writes it where the README does (argparse lists positionals last); any other command keeps its usage."""
    positionals = [a for a in parser._actions if not a.option_strings]
    for group in [a for a in positionals if isinstance(a, argparse._SubParsersAction)]:  # factory tasks expand
        for command in group.choices.values():
            run_folder_first_usage(command)
    if parser.usage or not positionals or positionals[0].metavar != "RUN_DIR":
        return
    words = [f"[{a.metavar or a.dest.upper()}]" if a.nargs == "?" else a.metavar or a.dest.upper() for a in positionals]
    spelled = {a: f"{a.option_strings[-1]} {a.metavar or a.dest.upper()}" for a in parser._actions if a.option_strings}
    words += [spelled[a] for a in parser._actions if a.option_strings and a.required]
    for group in parser._mutually_exclusive_groups:
        if group.required:
            words.append("(" + " | ".join(spelled[a] for a in group._group_actions) + ")")
    parser.usage = "%(prog)s " + " ".join(words) + " [options]"


def note(text: str) -> None:
    print(f"note: {text}", file=sys.stderr)


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


def flag_names(fields: Mapping[str, str] | Iterable[str], prefix: str = "") -> dict[str, str]:
    """`{prefix + field: "--flag-name"}` for the fields of `flag_overrides`: what an error names beside the key."""
    pairs = fields.items() if isinstance(fields, Mapping) else ((name, name) for name in fields)
    return {prefix + field: f"-{dest}" if len(dest) == 1 else f"--{dest.replace('_', '-')}" for field, dest in pairs}


class ConfigFlags(NamedTuple):
    """The run-config fields a command's flags set: declared by the command beside its flags (`sets_config`),
    applied by run_config.config_from_args, which knows no command's flags."""

    fields: dict[str, str]  # field -> flag dest: the field takes the flag's value when the flag is given
    switches: dict[str, tuple[str, Any]]  # field -> (store_true dest, value): the field takes value when it is on
    names: dict[str, str]  # field -> the flag as typed, named beside the field in an error
    finish: Callable[[Any, argparse.Namespace], Any] | None  # (config, args) -> config, after the model checks


NO_CONFIG_FLAGS = ConfigFlags({}, {}, {}, None)


def sets_config(
    parser: argparse.ArgumentParser,
    fields: Mapping[str, str] | None = None,
    switches: Mapping[str, tuple[str, Any]] | None = None,
    finish: Callable[[Any, argparse.Namespace], Any] | None = None,
) -> None:
    """Declare which run-config fields this command's flags set (call it after adding them)."""
    typed = {action.dest: max(action.option_strings, key=len) for action in parser._actions if action.option_strings}
    fields, switches = dict(fields or {}), dict(switches or {})
    dests = {**fields, **{field: dest for field, (dest, _) in switches.items()}}
    parser.set_defaults(config_flags=ConfigFlags(fields, switches, {f: typed[d] for f, d in dests.items()}, finish))


def config_flag_overrides(args: argparse.Namespace) -> tuple[dict[str, Any], ConfigFlags]:
    """The overrides the command's declared flags ask for, and the declaration."""
    own = getattr(args, "config_flags", NO_CONFIG_FLAGS)
    overrides = flag_overrides(args, own.fields)
    overrides.update({field: value for field, (dest, value) in own.switches.items() if getattr(args, dest, False)})
    return overrides, own


def parse_overrides(argv: list[str]) -> dict[str, Any]:
    """`--a.b value` / `--a.b=value` pairs; values are YAML scalars or flow lists."""
    import yaml

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


def with_overrides(
    base: M, overrides: dict[str, Any], source: str = "command line", flags: Mapping[str, str] | None = None
) -> M:
    """`base` with the dotted overrides set, validated again (a bad value is one line naming `source`, and
    the flag it came from where `flags` maps its key to one)."""
    from .config import validate_config

    data = base.model_dump()
    for key, value in overrides.items():
        set_dotted(data, key, value)
    given = {key: flag for key, flag in (flags or {}).items() if key in overrides}
    return validate_config(type(base), data, source, given)
