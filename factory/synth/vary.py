"""`factory tasks vary`: harder math and code variants of seed tasks, their answers computed in the sandbox.

    factory tasks vary --seeds ../shared/data/tasks/amc23.parquet --count 10 --model M --out variants.jsonl

Each seed (a math or code task) goes to the variant writer (math_code_role.py) over the run's
LLM; its program runs in factory.sandbox and the kept variants are written as task rows that
`factory coa --tasks` reads (math: `answers` as the program printed them; code: the seed's
tests plus the new cases as `reward_model.ground_truth`), with every candidate's verdicts
beside them (`<out>.report.jsonl`), as `tasks expand` writes its own. The LLM calls are kept
in the run folder's store, so a rerun asks nothing already answered.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import FactoryError
from ..llm import LLMClient
from ..run import open_run
from ..tasks import select_tasks
from .expand import ExpandResult
from .math_code import expand_math_code
from .outputs import write_outputs

if TYPE_CHECKING:
    from ..run_config import FactoryConfig

STAGE = "vary"


def add_vary_parser(task_commands: Any) -> None:
    from ..cli_options import add_llm_options

    vary = task_commands.add_parser(
        "vary", help="harder math/code variants of seed tasks; the sandbox computes answers"
    )
    add_llm_options(vary)
    vary.add_argument("--seeds", required=True, help="math or code task file (verl/AFM rows, JSONL or parquet)")
    vary.add_argument("--count", type=int, default=10, help="seed tasks to sample (default 10)")
    vary.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    vary.add_argument("--per-seed", type=int, default=1, help="variants asked of each seed (default 1)")
    vary.add_argument("--out", type=Path, required=True, help="the kept variants, JSONL")
    vary.set_defaults(func=cmd_tasks_vary, run_dir_default="outputs/vary", takes_run_config=True)


def cmd_tasks_vary(args: Any, config: FactoryConfig) -> int:
    seeds = [
        task
        for task in select_tasks(str(args.seeds), None, args.count, args.seed, "--seeds is required")
        if task.domain in ("math", "code")
    ]
    if not seeds:
        raise FactoryError(f"{args.seeds}: no math or code task to vary")
    with open_run(config.run_dir, STAGE, config) as run:
        candidates = asyncio.run(ask(config, run, seeds, args.per_seed))
    result = ExpandResult(candidates)
    report = write_outputs(result, args.out)
    print(result.funnel().replace("expand:", "vary:", 1))
    print(f"tasks: {len(result.kept)} -> {args.out}; every candidate's verdicts -> {report}")
    return 0


async def ask(config: FactoryConfig, run: Any, seeds: list, per_seed: int) -> list:
    async with LLMClient(config.llm, run.store, run.run_id) as client:
        return await expand_math_code(seeds, client, per_seed)
