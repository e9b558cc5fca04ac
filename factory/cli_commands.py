"""The table of `factory` commands: each one's help line and where its parser is built.

`factory --help` lists every command, but a command's parser lives beside its implementation
(`<package>/command.py`), and importing those modules loads the LLM client, DuckDB, pyarrow
and torch: seconds, for a help page. So the help lines are written here, and factory/cli.py
imports only the one command module a call names. tests/test_cli_commands.py checks that
this table says what the command modules build, so the two cannot drift apart.
"""

from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    name: str
    help: str
    module: str  # builds this command's parser with `adder(subparsers)`
    adder: str


# In --help order. Curation, publishing, training and evaluation follow the generating commands.
COMMANDS = (
    Command("smoke", "generate a few structured responses and summarise the call log", "factory.smoke.command", "add_smoke_parsers"),
    Command("ping", "one structured call to check a model or endpoint", "factory.smoke.command", "add_smoke_parsers"),
    Command("refine", "AgentRefine path: personas -> scripts -> verified trajectories", "factory.refine.command", "add_refine_parser"),
    Command("coa", "Chain-of-Agents path: tasks -> multi-agent runs -> AFM trajectories", "factory.coa.command", "add_coa_parsers"),
    Command("coa-import", "distil agent logs you already have into AFM trajectories", "factory.coa.command", "add_coa_parsers"),
    Command("import", "ATIF or ADP trajectories into a run store (then filter and export)", "factory.interchange.command", "add_import_parser"),
    Command("corpus", "build the offline geo corpus the local web_search can use", "factory.synth.command", "add_synth_parsers"),
    Command("tasks", "make harder tasks: multi-hop and composed QA, math/code variants", "factory.synth.command", "add_synth_parsers"),
    Command("show", "print one trajectory, mistakes marked (find ids with factory ls)", "factory.viewer.command", "add_show_parser"),
    Command("calls", "summarise a run's LLM call log", "factory.reporting.status_command", "add_calls_parser"),
    Command("run", "the whole job from one config: generate, passrate, filter, export, report, publish, train, eval (resumable)", "factory.pipeline.command", "add_run_parser"),
    Command("filter", "judge a run's trajectories with declarative SQL filters", "factory.filters.command", "add_filter_parser"),
    Command("passrate", "sample N rollouts per task from a policy model; pass rates for RL", "factory.passrate.command", "add_passrate_parser"),
    Command("pairs", 'AutoCoA stage 1: "when to act" preference pairs from the coa trajectories of a run', "factory.coa.pairs.command", "add_pairs_parser"),
    Command("export", "write kept trajectories as sharegpt / messages / AFM / native tool-call datasets", "factory.export.command", "add_export_parser"),
    Command("publish", "publish a run as a Hub dataset (or a local folder in its layout)", "factory.export.command", "add_publish_parser"),
    Command("report", "write a self-contained HTML report of a run (charts and tables)", "factory.reporting.command", "add_report_parser"),
    Command("quality", "quality figures of a run's verified trajectories (both paths)", "factory.reporting.command", "add_quality_parser"),
    Command("status", "a run's progress, errors and spend, also while it runs", "factory.reporting.status_command", "add_status_parser"),
    Command("eval", "play a model in held-out refine environments; report success and mistakes", "factory.evaluate.command", "add_eval_parser"),
    Command("store", "convert a run folder of an older factory, or check a store", "factory.upgrade.command", "add_store_parser"),
    Command("ls", "list a run's trajectories: stats, kept or dropped, and why rows failed", "factory.viewer.command", "add_ls_parser"),
)  # fmt: skip
