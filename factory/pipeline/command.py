"""`factory run -c pipeline.yaml`: generate → passrate → filter → export → report → publish → train → eval, resumable.

Each stage prints a header, its own funnel and failure reasons, and its time; a
stage that finished before with the same inputs is skipped (ledger.py). A stage
that fails stops the pipeline with its one-line error; the stages before it stay
recorded, so the same command continues from the failed stage.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from ..cli_options import add_dry_run_options, add_llm_options
from ..errors import FactoryError
from ..prompts import prompts_override
from ..scale.options import add_ray_options
from .config import STAGES, check_inputs
from .ledger import Ledger
from .stages import Context, all_stages, stage_fingerprint

if TYPE_CHECKING:  # the run config holds this package's section: a type here, not an import
    from ..run_config import FactoryConfig


def add_run_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "run",
        help="the whole job from one config: generate, passrate, filter, export, report, publish, train, eval (resumable)",
        description="Run the stages a config's `pipeline:` section names, in order (examples/pipeline.yaml; "
        "docs/pipeline.md). Finished stages are recorded in RUN_DIR/pipeline.json with a fingerprint "
        "of what decides their output: a rerun skips them, a changed setting reruns that stage and the ones after it "
        "(train only when the exported files it reads changed; settings of how, not what, such as llm timeouts, "
        "retries, rate limits and threads, rerun nothing), and a failed stage is where the next run starts.",
    )
    add_llm_options(parser)  # the config's llm: section, overridable as in every generation command
    parser.add_argument("--force", action="store_true", help="rerun every stage, even those finished before")
    parser.add_argument(
        "--from",
        dest="from_stage",
        choices=STAGES,
        metavar="STAGE",
        help=f"rerun this stage and all after it ({', '.join(STAGES)}); the earlier ones are not run",
    )
    parser.add_argument("--only", choices=STAGES, metavar="STAGE", help="run just this stage (the others untouched)")
    add_dry_run_options(parser)
    add_ray_options(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(func=cmd_run, run_dir_default="outputs/run", takes_run_config=True)
    return parser


def cmd_run(args: argparse.Namespace, config: FactoryConfig) -> int:
    if not args.config:
        raise FactoryError("factory run needs a pipeline config: -c pipeline.yaml (e.g. examples/pipeline.yaml)")
    with prompts_override(config.prompts_dir):  # also for stages outside a run (the export's dataset card)
        return run_stages(Context(config, progress=not args.quiet), args)


def run_stages(context: Context, args: argparse.Namespace) -> int:
    check_inputs(
        context.pipeline, context.config.passrate
    )  # a missing or broken file fails now, not after minutes of generation
    stages = all_stages(context.pipeline)
    chosen = chosen_stages([s.name for s in stages], args.from_stage, args.only)
    if "coa" in chosen:  # refused now, not after hours of batched generation before it
        from ..coa.batch import refuse_batch_mode

        refuse_batch_mode(context.config.llm)
    ledger = Ledger.open(context.run_dir) if context.run_dir.is_dir() else None
    prints: dict[str, str] = {}  # each taken when its stage's turn comes: train's covers the files export wrote
    forced = args.force or args.from_stage is not None or args.only is not None
    timings = []
    for number, stage in enumerate(stages, 1):
        header = f"== {number}/{len(stages)} {stage.name}"
        prints[stage.name] = stage_fingerprint(stage, context, list(prints.values()))
        done = ledger.finished(stage.name, prints[stage.name]) if ledger else None
        if done and stage.outputs_missing(context):
            print(f"{header}: its output is gone since it finished; running it again", flush=True)
            done = None
        if stage.name not in chosen or (done and not forced):
            reason = "not chosen" if stage.name not in chosen else "finished before with the same inputs"
            print(f"{header}: skipped ({reason})", flush=True)
            timings.append((stage.name, "skipped", 0.0))
            continue
        print(header, flush=True)
        started = time.monotonic()
        lines = stage.run(context)
        seconds = time.monotonic() - started
        ledger = ledger or Ledger.open(context.run_dir)  # the first stage made the run folder
        ledger.record(stage.name, prints[stage.name], seconds, lines)
        print("\n".join(f"   {line}" for line in lines), flush=True)
        print(f"   ({seconds:.1f} s)", flush=True)
        timings.append((stage.name, "done", seconds))
    print(
        "pipeline: "
        + ", ".join(f"{name} {state}" + (f" {s:.0f} s" if state == "done" else "") for name, state, s in timings)
    )
    return 0


def chosen_stages(names: list[str], from_stage: str | None, only: str | None) -> set[str]:
    for asked in (from_stage, only):
        if asked is not None and asked not in names:
            raise FactoryError(f"stage '{asked}' is not in this pipeline (its stages: {', '.join(names)})")
    if only is not None:
        return {only}
    return set(names[names.index(from_stage) :]) if from_stage else set(names)
