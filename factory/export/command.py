"""`factory export` and `factory publish`: argument parsers and command functions (wired in factory/cli.py)."""

from __future__ import annotations

import argparse

from ..config import validate_config
from .dataset import ExportResult, export_dataset
from .options import FORMATS, export_options
from .publish import publish
from .verl import RLOptions


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the run folder holding factory.sqlite")
    parser.add_argument(
        "--validation", type=float, help="share of task groups held out when no split filter ran (default 0.05)"
    )
    parser.add_argument("--upsample", choices=["none", "repeat"], help="repeat: write a row of weight k>1 k times")
    parser.add_argument("--license", help="license in the dataset card (default apache-2.0)")
    parser.add_argument("--pretty-name", help="title of the dataset card")
    parser.add_argument("--tokenizer", help="the trl format is pre-tokenized with this tokenizer (folder or Hub name)")
    parser.add_argument("--max-length", type=int, help="trl format: keep whole turns up to this many tokens")
    parser.add_argument(
        "--tool-calls",
        choices=["text", "native"],
        help="trl format: actions as the trajectory's text (default) or native tool calls",
    )
    parser.add_argument(
        "--observations",
        choices=["mask", "train"],
        help="train: observations in the loss too (AutoCoA stage 3, a world model); default mask",
    )
    parser.add_argument(
        "--pair-chosen",
        choices=["corrected", "plan"],
        help="refine pairs: chosen = the correction taken, always (default) or only on a shortest plan",
    )


def add_export_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "export", help="write kept trajectories as sharegpt / messages / AFM / native tool-call datasets"
    )
    _add_common(parser)
    parser.add_argument(
        "--format",
        default="all",
        choices=[*FORMATS, "all"],
        help="which format (default all: every one but the interchange formats atif and adp)",
    )
    parser.add_argument("--out", required=True, help="output folder: <format>/<split>-*.parquet and README.md")
    parser.add_argument("--jsonl", action="store_true", help="JSON lines instead of Parquet")
    _add_rl(parser)
    parser.set_defaults(func=cmd_export)
    return parser


def _add_rl(parser: argparse.ArgumentParser) -> None:
    """The RL hand-off (factory/export/verl.py): which split holds RL queries, where their answers are."""
    parser.add_argument("--rl-split", help="the split written as verl RL rows, not SFT rows (default rl)")
    parser.add_argument(
        "--tasks",
        action="append",
        help="task file with the RL queries' reference answers (repeatable; default: the task files the run recorded)",
    )
    parser.add_argument(
        "--pass-rate-model",
        help="rollouts label whose pass rate goes in extra_info (default: the run's pass_rate filter's model)",
    )


def _rl_options(args: argparse.Namespace) -> RLOptions:
    values = {"split": args.rl_split, "tasks": args.tasks, "pass_rate_model": args.pass_rate_model}
    return validate_config(RLOptions, {k: v for k, v in values.items() if v is not None}, "RL options")


def add_publish_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("publish", help="publish a run as a Hub dataset (or a local folder in its layout)")
    _add_common(parser)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--repo-id", help="Hub dataset repo ORG/NAME (token from HF_TOKEN)")
    target.add_argument("--to", help="write the Hub layout to this local folder instead of pushing")
    parser.add_argument("--private", action="store_true", help="create the Hub repo private")
    parser.add_argument("--format", default="all", choices=[*FORMATS, "all"], help="which configs (default all)")
    _add_rl(parser)
    parser.set_defaults(func=cmd_publish)
    return parser


def _options(args: argparse.Namespace, file_type: str = "parquet"):
    return export_options(formats=args.format, file_type=file_type, validation=args.validation,
                          upsample=args.upsample, license=args.license, pretty_name=args.pretty_name,
                          tokenizer=args.tokenizer, max_length=args.max_length,
                          tool_calls=args.tool_calls, observations=args.observations,
                          pair_chosen=args.pair_chosen)  # fmt: skip


def cmd_export(args: argparse.Namespace) -> int:
    options = _options(args, "jsonl" if args.jsonl else "parquet")
    print(format_result(export_dataset(args.run_dir, args.out, options, rl=_rl_options(args))))
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    outcome = publish(args.run_dir, repo_id=args.repo_id, to=args.to, private=args.private, options=_options(args),
                      rl=_rl_options(args))  # fmt: skip
    print(format_result(outcome.export))
    if outcome.commit_url:
        print(f"pushed to {outcome.repo_url} ({outcome.commit_url})")
    return 0


def format_result(result: ExportResult) -> str:
    lines = ["kept rows by split: " + ", ".join(f"{split} {n}" for split, n in result.selected.items())]
    for fmt in result.formats:
        counts = ", ".join(f"{split} {n}" for split, n in fmt.rows.items())
        lines.append(f"{fmt.name}: {counts} -> {result.out / fmt.folder}")
    if result.rl is not None:
        lines.append(
            f"verl (RL queries): {result.rl.rows} rows from {result.rl.trajectories} trajectories -> "
            f"{result.out / result.rl.folder}"
        )
    lines += [f"note: {warning}" for warning in result.warnings]
    if result.card is not None:
        lines.append(f"dataset card: {result.card}")
    return "\n".join(lines)
