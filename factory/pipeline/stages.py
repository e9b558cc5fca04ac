"""Each stage of `factory run`: what it reads, what it runs, the lines it reports.

A stage is a function of the pipeline context returning its summary lines; the
fingerprint of its inputs (ledger.py) decides whether a rerun skips it. Stages call
the same Python functions as the single commands, so `factory run` and the README's
command-by-command chain produce the same files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..failures import format_failures, funnel_line
from ..llm.call_summary import format_call_summary, summarize_calls
from ..llm.config import LLMConfig
from ..prompts import prompts_dir_digest
from .config import PipelineConfig
from .expand_stage import expand_inputs, run_expand_stage
from .ledger import fingerprint, without_how
from .train_stage import eval_inputs, run_eval_stage, run_train_stage, train_inputs

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
    chained: bool = True  # False: its inputs name every file it reads, so the stages before it are left out

    def outputs_missing(self, ctx: Context) -> bool:
        return any(not path.exists() for path in self.outputs(ctx))


def generation_inputs(section: str) -> Callable[[Context], list]:
    """The llm: and the stage's section less their how-not-what fields (ledger.HOW_NOT_WHAT), the prompts,
    and the bytes of the file the section samples from (refine.personas, coa.tasks)."""

    def inputs(ctx: Context) -> list:
        data = ctx.config.model_dump(mode="json", include={"llm", section, "prompts_dir"})
        data = {key: without_how(value, key) if isinstance(value, dict) else value for key, value in data.items()}
        data["prompts_digest"] = prompts_dir_digest(ctx.config.prompts_dir)  # an edited prompt reruns generation
        source = {"refine": "personas", "coa": "tasks"}.get(section)
        read = source and getattr(getattr(ctx.config, section), source)
        return [data, *([Path(read)] if read else [])]  # a folder (a saved dataset) counts by its name

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


def run_pairs_stage(ctx: Context) -> list[str]:
    """`factory pairs` with the config's pairs: section (after passrate, whose rollouts it reads)."""
    from ..coa.pairs import make_pairs
    from ..coa.pairs.command import format_pairs
    from ..coa.pairs.recall import STAGE

    outcome = make_pairs(ctx.config, ctx.config.pairs, progress=ctx.progress)
    summary = format_call_summary(summarize_calls(ctx.run_dir, STAGE)).splitlines()[0]
    return [*format_pairs(outcome, ctx.config.pairs).splitlines(), summary]


def passrate_policy(ctx: Context) -> LLMConfig:
    return ctx.pipeline.passrate.policy or ctx.config.llm


def passrate_inputs(ctx: Context) -> list:
    """The passrate: section, the policy (less its how-not-what fields), the prompts and the task file's bytes."""
    policy = without_how(passrate_policy(ctx).model_dump(mode="json"), "pipeline.passrate.policy", as_root="llm")
    return [*generation_inputs("passrate")(ctx), policy, Path(ctx.config.passrate.tasks)]


def run_filter_stage(ctx: Context) -> list[str]:
    from ..filters.funnel import format_funnel
    from ..filters.runner import run_filters

    return format_funnel(run_filters(ctx.run_dir, ctx.pipeline.filter)).splitlines()


def export_options(ctx: Context, formats: list[str] | None = None):
    from ..export.options import export_options as make_options

    stage = ctx.pipeline.export
    return make_options(formats=formats or ctx.pipeline.formats(), file_type=stage.file_type,
                        validation=stage.validation, observations=stage.observations, pair_chosen=stage.pair_chosen)  # fmt: skip


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
    if pipeline.pairs:
        stages.append(Stage("pairs", run_pairs_stage, generation_inputs("pairs")))
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
        metrics = lambda ctx: [ctx.train_dir / "metrics.json"]  # noqa: E731
        stages.append(Stage("train", run_train_stage, train_inputs, metrics, chained=False))
    if pipeline.eval is not None:
        stages.append(Stage("eval", run_eval_stage, eval_inputs))
    return stages


def stage_fingerprint(stage: Stage, ctx: Context, before: list[str]) -> str:
    """A stage's fingerprint: its inputs and, when chained, the fingerprints of the stages before it
    (`before`, in order). Taken when the stage's turn comes, so train reads the files export just wrote."""
    return fingerprint(stage.name, *(before if stage.chained else []), *stage.inputs(ctx))
