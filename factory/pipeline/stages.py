"""Each stage of `factory run`: what it reads, what it runs, the lines it reports.

A stage is a function of the pipeline context returning its summary lines; the
fingerprint of its inputs (ledger.py) decides whether a rerun skips it. Stages call
the same Python functions as the single commands, so `factory run` and the README's
command-by-command chain produce the same files.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..errors import FactoryError, require_train_extra
from ..failures import format_failures, funnel_line
from ..llm.call_summary import format_call_summary, summarize_calls
from ..llm.config import LLMConfig
from ..prompts import prompts_dir_digest
from .config import PipelineConfig
from .expand_stage import expand_inputs, run_expand_stage
from .ledger import fingerprint

if TYPE_CHECKING:  # the run config holds the pipeline section: a type here, not an import
    from ..run_config import FactoryConfig


@dataclass
class Context:
    config: FactoryConfig
    progress: bool

    @property
    def run_dir(self) -> Path:
        return Path(self.config.run_dir)

    @property
    def pipeline(self) -> PipelineConfig:
        return self.config.pipeline

    @property
    def export_dir(self) -> Path:
        return self.pipeline.export.out or self.run_dir / "export"

    @property
    def train_dir(self) -> Path:
        train = self.pipeline.train
        return Path(train.overrides.get("output_dir", self.run_dir / "train"))


@dataclass
class Stage:
    name: str
    run: Callable[[Context], list[str]]
    inputs: Callable[[Context], list]  # what the stage's fingerprint covers, besides the stages before it
    outputs: Callable[[Context], list[Path]] = lambda ctx: []  # deleted since it ran: the stage runs again

    def outputs_missing(self, ctx: Context) -> bool:
        return any(not path.exists() for path in self.outputs(ctx))


def generation_inputs(section: str) -> Callable[[Context], list]:
    def inputs(ctx: Context) -> list:
        data = ctx.config.model_dump(mode="json", include={"llm", section, "prompts_dir"})
        data["llm"].pop("concurrency", None)  # how fast, not what: a rerun at another concurrency is the same run
        data["llm"].pop("batch", None)  # batch mode too: the same requests, answered later and cheaper
        data["prompts_digest"] = prompts_dir_digest(ctx.config.prompts_dir)  # an edited prompt reruns generation
        return [data]

    return inputs


def run_refine_stage(ctx: Context) -> list[str]:
    from ..refine.batch import run_refine

    outcome = run_refine(ctx.config, progress=ctx.progress)
    return [
        funnel_line(outcome.funnel),
        *failure_lines(ctx, "refine"),
        format_call_summary(summarize_calls(ctx.run_dir)).splitlines()[0],
    ]


def run_coa_stage(ctx: Context) -> list[str]:
    from ..coa import run_coa

    outcome = run_coa(ctx.config, progress=ctx.progress)
    return [
        funnel_line(outcome.funnel),
        *failure_lines(ctx, "coa"),
        format_call_summary(summarize_calls(ctx.run_dir)).splitlines()[0],
    ]


def failure_lines(ctx: Context, stage: str) -> list[str]:
    return format_failures(ctx.run_dir, [stage]).splitlines()


def run_passrate_stage(ctx: Context) -> list[str]:
    """`factory passrate` with the config's passrate: section, the stage's policy (default llm:) sampled."""
    from ..passrate.job import format_passrate, run_passrate
    from ..passrate.sampler import STAGE

    outcome, summary = run_passrate(ctx.config, ctx.config.passrate, passrate_policy(ctx), progress=ctx.progress)
    return [
        *format_passrate(outcome, summary).splitlines(),
        format_call_summary(summarize_calls(ctx.run_dir, STAGE)).splitlines()[0],
    ]


def passrate_policy(ctx: Context) -> LLMConfig:
    return ctx.pipeline.passrate.policy or ctx.config.llm


def passrate_inputs(ctx: Context) -> list:
    """The passrate: section, the policy (not its concurrency), the prompts and the task file's bytes."""
    policy = passrate_policy(ctx).model_dump(mode="json", exclude={"concurrency", "batch"})
    return [*generation_inputs("passrate")(ctx), policy, Path(ctx.config.passrate.tasks)]


def run_filter_stage(ctx: Context) -> list[str]:
    from ..filters.funnel import format_funnel
    from ..filters.runner import run_filters

    return format_funnel(run_filters(ctx.run_dir, ctx.pipeline.filter)).splitlines()


def export_options(ctx: Context, formats: list[str] | None = None):
    from ..export.options import export_options as make_options

    stage = ctx.pipeline.export
    return make_options(
        formats=formats or ctx.pipeline.formats(), file_type=stage.file_type, validation=stage.validation
    )


def run_export_stage(ctx: Context) -> list[str]:
    from ..export.command import format_result
    from ..export.dataset import export_dataset

    return format_result(export_dataset(ctx.run_dir, ctx.export_dir, export_options(ctx))).splitlines()


def run_report_stage(ctx: Context) -> list[str]:
    from ..reporting.build import write_report

    options = export_options(ctx) if ctx.pipeline.export is not None else None  # count the splits as exported
    return [f"report: {write_report(ctx.run_dir, options=options)}"]


def run_publish_stage(ctx: Context) -> list[str]:
    from ..export.command import format_result
    from ..export.publish import publish

    target = ctx.pipeline.publish
    outcome = publish(
        ctx.run_dir, repo_id=target.repo_id, to=target.to, private=target.private, options=export_options(ctx)
    )
    lines = format_result(outcome.export).splitlines()
    return lines + ([f"pushed to {outcome.repo_url} ({outcome.commit_url})"] if outcome.commit_url else [])


def split_files(ctx: Context, split: str) -> list[str]:
    """The exported shards of the trainer's format for one split (empty when the split is)."""
    stage, train = ctx.pipeline.export, ctx.pipeline.train
    folder = ctx.export_dir / train.format
    return [str(path) for path in sorted(folder.glob(f"{split}-*.{stage.file_type}"))]


def train_overrides(ctx: Context) -> list[str]:
    """The trainer's `--section.field value` flags: the pipeline's export as its data, RUN_DIR/train as output."""
    train_files = split_files(ctx, "train")
    if not train_files:
        raise FactoryError(
            f"{ctx.export_dir}: the export wrote no train split in {ctx.pipeline.train.format}; nothing to train on"
        )
    values = {"data.train": train_files, "data.validation": split_files(ctx, "validation"),
              "output_dir": str(ctx.train_dir), **ctx.pipeline.train.overrides}  # fmt: skip
    flags = []
    for key, value in values.items():
        flags += [f"--{key}", json.dumps(value)]  # JSON is YAML: the trainer parses each value as YAML
    return flags


def run_train_stage(ctx: Context) -> list[str]:
    require_train_extra("the pipeline's train stage")
    from train.config import load_config
    from train.sft import train

    quiet_hub_bars()
    metrics = train(load_config(ctx.pipeline.train.config, train_overrides(ctx)))
    shown = {key: metrics[key] for key in ("steps", "train_loss", "eval_loss", "trained_tokens") if key in metrics}
    return [f"trained: {json.dumps(shown)} -> {ctx.train_dir}"]


def quiet_hub_bars() -> None:
    """No per-file load/save bars from transformers: they would drown the stage's lines (as train.sft does)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def run_eval_stage(ctx: Context) -> list[str]:
    require_train_extra("the pipeline's eval stage")
    from train.checkpoint import last_checkpoint
    from train.evaluate.command import add_eval_parser, run_eval
    from train.evaluate.results import format_results

    quiet_hub_bars()
    checkpoint = last_checkpoint(ctx.train_dir)
    if checkpoint is None:
        raise FactoryError(f"{ctx.train_dir}: no finished checkpoint to evaluate")
    argv = ["eval", str(ctx.run_dir), "--model", str(checkpoint)]
    argv += [flag for path in split_files(ctx, "train") for flag in ("--exclude-train", path)]
    stage = ctx.pipeline.eval
    for flag, value in (("--config", stage.config), ("--max-steps", stage.max_steps), ("--limit", stage.limit)):
        if value is not None:
            argv += [flag, str(value)]
    parser = argparse.ArgumentParser(prog="factory")
    add_eval_parser(parser.add_subparsers(dest="command"))
    results, path = run_eval(parser.parse_args(argv))
    return [*format_results(results).splitlines(), f"results: {path}"]


def eval_inputs(ctx: Context) -> list:
    stage = ctx.pipeline.eval
    return [stage.model_dump(mode="json"), stage.config and Path(stage.config)]


def train_inputs(ctx: Context) -> list:
    return [ctx.pipeline.train.model_dump(mode="json"), Path(ctx.pipeline.train.config)]


def all_stages(pipeline: PipelineConfig) -> list[Stage]:
    """The configured stages, in the order they run."""
    generate = {
        "refine": Stage("refine", run_refine_stage, generation_inputs("refine")),
        "coa": Stage("coa", run_coa_stage, generation_inputs("coa")),
    }
    stages = [generate[path] for path in pipeline.generate]
    if pipeline.expand is not None:
        out = lambda ctx: [ctx.pipeline.expand.out]  # noqa: E731
        stages.insert(0, Stage("expand", run_expand_stage, expand_inputs, out))
    if pipeline.passrate is not None:
        stages.append(Stage("passrate", run_passrate_stage, passrate_inputs))
    if pipeline.filter is not None:
        stages.append(Stage("filter", run_filter_stage, lambda ctx: [Path(ctx.pipeline.filter)]))
    if pipeline.export is not None:
        stages.append(
            Stage(
                "export",
                run_export_stage,
                lambda ctx: [ctx.pipeline.export.model_dump(mode="json"), ctx.pipeline.formats()],
                lambda ctx: [ctx.export_dir / "README.md"],
            )
        )
    if pipeline.report:
        stages.append(Stage("report", run_report_stage, lambda ctx: [], lambda ctx: [ctx.run_dir / "report.html"]))
    if pipeline.publish is not None:
        stages.append(
            Stage(
                "publish",
                run_publish_stage,
                lambda ctx: [ctx.pipeline.publish.model_dump(mode="json")],
                lambda ctx: [ctx.pipeline.publish.to / "README.md"] if ctx.pipeline.publish.to else [],
            )
        )
    if pipeline.train is not None:
        stages.append(Stage("train", run_train_stage, train_inputs, lambda ctx: [ctx.train_dir / "metrics.json"]))
    if pipeline.eval is not None:
        stages.append(Stage("eval", run_eval_stage, eval_inputs))
    return stages


def stage_fingerprints(stages: list[Stage], ctx: Context) -> dict[str, str]:
    """Each stage's fingerprint: its inputs and every fingerprint before it."""
    prints, before = {}, []
    for stage in stages:
        prints[stage.name] = fingerprint(stage.name, *before, *stage.inputs(ctx))
        before.append(prints[stage.name])
    return prints
