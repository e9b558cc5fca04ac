"""`factory` command line: a thin layer over the Python API."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from . import __version__
from .config import validate_config
from .errors import FactoryError, require_train_extra
from .failures import format_failures
from .llm.call_summary import format_call_summary, summarize_calls
from .settings import FactoryConfig, load_factory_config
from .store.integrity import StoreBusyError


def _add_llm_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-c", "--config", help="YAML config file (see README: Configuration)")
    parser.add_argument(
        "--model", help='"local", "local:/path.gguf", a litellm model string, or a name with --base-url'
    )
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--api-key-env", help="environment variable holding the key for --base-url")
    parser.add_argument("--concurrency", type=int, help="requests in flight at once")
    parser.add_argument("--run-dir", help="run folder holding the DuckDB store")
    parser.add_argument("--no-cache", action="store_true", help="call the model even for requests already answered")


SECTION_FLAGS = {
    "refine": ("count", "seed", "personas", "min_corrections", "budget", "scripts", "trajectories"),
    "coa": ("tasks", "count", "seed", "domain", "variant", "max_steps"),
}


def _config_from(args: argparse.Namespace) -> FactoryConfig:
    config = load_factory_config(args.config)
    data = config.model_dump()
    overrides = {"model": args.model, "base_url": args.base_url, "api_key_env": args.api_key_env,
                 "concurrency": args.concurrency}  # fmt: skip
    data["llm"].update({k: v for k, v in overrides.items() if v is not None})
    if args.no_cache:
        data["llm"]["cache"] = False
    if args.run_dir:
        data["run_dir"] = args.run_dir
    elif "run_dir" not in config.model_fields_set and getattr(args, "run_dir_default", None):
        data["run_dir"] = args.run_dir_default  # the command's own folder, unless the config names one
    if getattr(args, "n", None) is not None:
        data["smoke"]["n"] = args.n
    section = getattr(args, "section", None)  # the config section this command's flags are named after
    for field in SECTION_FLAGS.get(section, ()):
        if getattr(args, field, None) is not None:
            data[section][field] = getattr(args, field)
    if getattr(args, "corpus", None):
        data["coa"]["tools"]["web_search"] = {"enabled": True, "backend": "local", "local": {"path": args.corpus}}
    if getattr(args, "no_code", False):
        data["refine"]["with_code"] = False
    if getattr(args, "no_injection", False):
        data["refine"]["injection"] = False
    if getattr(args, "dm", None):
        data["refine"]["dm_evaluation"] = args.dm
    return validate_config(FactoryConfig, data, "command line")


def cmd_smoke(args: argparse.Namespace) -> int:
    from .smoke import run_smoke

    config = _config_from(args)
    outcome = run_smoke(config, progress=not args.quiet)
    for result in outcome.results:
        shown = result.parsed.model_dump_json() if result.ok else f"ERROR {result.error_kind}: {result.error}"
        print(f"[{result.tag}] {shown}")
    print(f"\nrun store: {Path(config.run_dir) / 'factory.duckdb'}")
    print(format_call_summary(summarize_calls(config.run_dir, config.smoke.stage)))
    return 0 if all(r.ok for r in outcome.results) else 1


def cmd_ping(args: argparse.Namespace) -> int:
    from .smoke import ping

    config = _config_from(args)
    result = ping(config)
    if not result.ok:
        print(f"ping failed ({result.error_kind}) after {result.attempts} attempt(s): {result.error}")
        return 1
    print(
        f"ok in {result.latency_s:.2f}s, {result.prompt_tokens}+{result.completion_tokens} tokens: "
        f"{result.parsed.model_dump_json()}"
    )
    return 0


def cmd_refine(args: argparse.Namespace) -> int:
    from .refine.batch import run_refine
    from .refine.quality import format_quality
    from .reporting.command import run_quality

    config = _config_from(args)
    outcome = run_refine(config, progress=not args.quiet)
    _print_funnel(outcome.funnel)
    print(format_failures(config.run_dir, ["refine"]))
    if outcome.skipped_personas:
        print(
            f"personas skipped (too long to be a persona): {len(outcome.skipped_personas)}; "
            f"first: {outcome.skipped_personas[0]}"
        )
    print(f"run store: {Path(config.run_dir) / 'factory.duckdb'}  (factory show {config.run_dir} ID)")
    print(format_call_summary(summarize_calls(config.run_dir)))
    print(format_quality(run_quality(config.run_dir)))  # issue 13: the data's quality, not only its yield
    return 0


def cmd_coa(args: argparse.Namespace) -> int:
    from .coa import run_coa

    config = _config_from(args)
    return _print_coa(run_coa(config, progress=not args.quiet), config.run_dir)


def cmd_coa_import(args: argparse.Namespace) -> int:
    from .coa import run_coa_import

    run_dir = args.run_dir or "outputs/coa-import"
    outcome = run_coa_import(run_dir, args.path, variant=args.variant, fmt=args.format, progress=not args.quiet)
    return _print_coa(outcome, run_dir)


def _print_coa(outcome, run_dir) -> int:
    _print_funnel(outcome.funnel)
    print(format_failures(run_dir, ["coa"]))
    print(f"run store: {Path(run_dir) / 'factory.duckdb'}  (factory show {run_dir} ID)")
    print(format_call_summary(summarize_calls(run_dir)))
    return 0


def _print_funnel(funnel: dict[str, int]) -> None:
    print("funnel: " + " -> ".join(f"{name.replace('_', ' ')} {n}" for name, n in funnel.items()))


def cmd_show(args: argparse.Namespace) -> int:
    from .refine.show import format_trajectory, load_trajectory_row
    from .viewer.pick import last_shown, pick_id, remember

    last = last_shown(args.run_dir)
    row = load_trajectory_row(args.run_dir, pick_id(args.run_dir, args.id, args.random, args.next, args.seed))
    if args.next and last is not None and row["trajectory_id"] <= last:
        print("(past the last trajectory: back to the first)", file=sys.stderr)
    print(format_trajectory(row, color=sys.stdout.isatty()))
    remember(args.run_dir, row["trajectory_id"])  # where --next goes on from
    return 0


def cmd_calls(args: argparse.Namespace) -> int:
    try:
        summary = summarize_calls(args.run_dir, args.stage)
    except StoreBusyError as busy:  # a run is writing the store: show its live snapshot instead
        from .reporting.status_command import print_live_calls

        return print_live_calls(args.run_dir, busy, args.json, args.stage)
    print(json.dumps(summary, indent=2, default=str) if args.json else format_call_summary(summary))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="factory", description="Synthetic agent-trajectory data factory.")
    parser.add_argument("--version", action="version", version=f"factory {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    smoke = commands.add_parser("smoke", help="generate a few structured responses and summarise the call log")
    _add_llm_options(smoke)
    smoke.add_argument("-n", type=int, help="how many responses (default 4)")
    smoke.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    smoke.set_defaults(func=cmd_smoke)

    ping = commands.add_parser("ping", help="one structured call to check a model or endpoint")
    _add_llm_options(ping)
    ping.set_defaults(func=cmd_ping, run_dir_default="outputs/ping")

    refine = commands.add_parser("refine", help="AgentRefine path: personas -> scripts -> verified trajectories")
    _add_llm_options(refine)
    refine.add_argument("--count", type=int, help="personas to sample (one trajectory each)")
    refine.add_argument("--seed", type=int, help="sampling and injection seed")
    refine.add_argument("--personas", help="JSONL/CSV/parquet file or saved dataset (default: shipped library)")
    refine.add_argument("--min-corrections", type=int, help="corrected mistakes required (default 2)")
    refine.add_argument("--budget", type=int, help="LLM calls per trajectory, script included (default 4)")
    refine.add_argument("--no-code", action="store_true", help="declarative rules only, no validation code")
    refine.add_argument("--no-injection", action="store_true", help="rely on the prompt alone for mistakes")
    refine.add_argument(
        "--dm",
        choices=["llm", "world"],
        help="who judges actions: the LLM as DM (default, the paper) or the script's world",
    )
    refine.add_argument(
        "--scripts",
        choices=["auto", "llm", "procedural"],
        help="who writes the worlds: the LLM (the paper), a seeded procedural builder, or auto "
        "(default: procedural for the embedded 'local' model, the LLM otherwise)",
    )
    refine.add_argument(
        "--trajectories",
        choices=["auto", "llm", "scaffolded"],
        help="who plays the trajectories: the LLM (the paper), scaffolded (the world's plan fixes "
        "the actions, the LLM writes the thoughts), or auto (default: scaffolded for 'local')",
    )
    refine.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    refine.set_defaults(func=cmd_refine, run_dir_default="outputs/refine", section="refine")

    coa = commands.add_parser("coa", help="Chain-of-Agents path: tasks -> multi-agent runs -> AFM trajectories")
    _add_llm_options(coa)
    coa.add_argument("--tasks", help="JSONL/parquet task file or saved dataset (verl/AFM rows work as they are)")
    coa.add_argument("--count", type=int, help="tasks to sample (one run each)")
    coa.add_argument("--seed", type=int, help="sampling seed")
    coa.add_argument("--domain", choices=["qa", "math", "code"], help="keep only tasks of this domain")
    coa.add_argument("--variant", choices=["auto", "mas", "code"], help="web agents, the code agent, or by domain")
    coa.add_argument("--max-steps", type=int, help="tool calls per task")
    coa.add_argument("--corpus", help="JSONL/parquet corpus (id, title, text) for the local web_search backend")
    coa.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    coa.set_defaults(func=cmd_coa, run_dir_default="outputs/coa", section="coa")

    coa_import = commands.add_parser("coa-import", help="distil agent logs you already have into AFM trajectories")
    coa_import.add_argument("path", help="JSONL of OpenAI tool-calling conversations or smolagents step memory")
    coa_import.add_argument(
        "--variant",
        choices=["mas", "code"],
        default="mas",
        help="distil as the web-agent (mas, default) or the code-agent trajectory format",
    )
    coa_import.add_argument(
        "--format",
        choices=["auto", "openai", "smolagents"],
        default="auto",
        help="the log's format (default auto: a record with chat messages is openai, any other smolagents)",
    )
    coa_import.add_argument("--run-dir", help="run folder (default outputs/coa-import)")
    coa_import.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    coa_import.set_defaults(func=cmd_coa_import)

    show = commands.add_parser("show", help="print one trajectory, mistakes marked (find ids with factory ls)")
    show.add_argument("run_dir", help="the run folder")
    show.add_argument("id", nargs="?", help="trajectory id (refine:PERSONA, coa:TASK) or persona id")
    show.add_argument("--random", action="store_true", help="a random trajectory instead of an ID")
    show.add_argument(
        "--next",
        action="store_true",
        help="the trajectory after the last one shown (in id order; the first one the first time)",
    )
    show.add_argument("--seed", type=int, help="seed of --random, to pick the same row again")
    show.set_defaults(func=cmd_show)

    calls = commands.add_parser("calls", help="summarise a run's LLM call log")
    calls.add_argument("run_dir", help="the run folder")
    calls.add_argument("--stage", help="only this stage")
    calls.add_argument("--json", action="store_true", help="machine-readable output")
    calls.set_defaults(func=cmd_calls)
    add_later_stage_parsers(commands)
    return parser


def add_later_stage_parsers(commands) -> None:
    """Curation, publishing, training and evaluation: each module owns its parser and handler."""
    from train.evaluate.command import add_eval_parser

    from .export.command import add_export_parser, add_publish_parser
    from .filters.command import add_filter_parser
    from .passrate.command import add_passrate_parser
    from .pipeline.command import add_run_parser
    from .reporting.command import add_quality_parser, add_report_parser
    from .reporting.status_command import add_status_parser
    from .viewer.command import add_ls_parser

    for add_parser in (add_run_parser, add_filter_parser, add_passrate_parser, add_export_parser, add_publish_parser,
                       add_report_parser, add_quality_parser, add_status_parser, add_eval_parser):  # fmt: skip
        add_parser(commands)
    add_ls_parser(commands)
    # Listed for --help only: main() hands `factory train ...` to train.sft before argparse sees it.
    commands.add_parser("train", help="masked SFT on an exported dataset (python -m train.sft --help)")


def run_trainer(argv: list[str]) -> int:
    require_train_extra("factory train")
    from train.sft import main as train_main

    return train_main(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        try:
            return _dispatch(argv)
        finally:  # also after argparse's SystemExit (--help): a closed pipe shows here, not at the interpreter's exit
            sys.stdout.flush()
    except BrokenPipeError:
        return _reader_went_away()


def _dispatch(argv: list[str]) -> int:
    try:
        if argv[:1] == ["train"]:  # the trainer parses its own `--section.field value` overrides
            return run_trainer(argv[1:])
        args = build_parser().parse_args(argv)
        return args.func(args)
    except FactoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: completed calls are saved; run the same command again to finish", file=sys.stderr)
        return 130


def _reader_went_away() -> int:
    """`factory ... | head`: the reader closed the pipe. Stop quietly, as cat and grep do (exit 128 + SIGPIPE)."""
    # Whatever is still buffered for stdout cannot be written; point stdout at /dev/null so
    # the interpreter's final flush does not print a second BrokenPipeError on the way out.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
