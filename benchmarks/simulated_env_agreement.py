"""Agreement of the simulated environment (AutoCoA RL stage 1) with the real world's verdicts.

    python benchmarks/simulated_env_agreement.py --replay benchmarks/data/simulator_replay/capable_v1.json
    python benchmarks/simulated_env_agreement.py                        # the embedded SmolLM2 (--steps moves, spread)
    python benchmarks/simulated_env_agreement.py --model openai/gpt-4o-mini --steps 0
    python benchmarks/simulated_env_agreement.py --run outputs/refine --model M   # your run's verified trajectories

Each recorded move is asked of the simulator (factory/envs/simulator.py) with the real history before it,
and its verdict is compared with `world.step`'s (factory/envs/simulator_agreement.py): accepted/refused,
goal reached, error type, per error type the world gave, with counts and the first disagreements.

The cases (`benchmark_cases`): three trajectories a capable model played in the recorded refine set
(benchmarks/data/refine_replay/capable_v1: its first three scripts, moves grounded by the world), two more
of its scripts played by the world's shortest plan with mistakes injected (scaffold.planned_steps,
with_mistakes: wrong place, premature finish, stale belief, wrong amount), and two procedural worlds
(refine/procedural.py) played the same way. With --replay FILE the model is a recorded set of capable-model
replies to exactly these prompts, served over loopback HTTP (tests/simulator_replay.py; --pending DIR
writes the prompts it lacks). Figures go to benchmarks/results/simulated_env_agreement.json under a key
naming the model and the sample.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from contextlib import closing
from pathlib import Path

from results_file import report

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from simulator_replay import SimulatorReplayServer  # noqa: E402

from factory.envs.simulator import WorldSimulator  # noqa: E402
from factory.envs.simulator_agreement import Case, measure_agreement, store_cases  # noqa: E402
from factory.llm import LLMClient, LLMConfig  # noqa: E402
from factory.personas import load_library, sample_personas  # noqa: E402
from factory.refine.config import RefineConfig  # noqa: E402
from factory.refine.grounding import ground_steps  # noqa: E402
from factory.refine.procedural import build_script  # noqa: E402
from factory.refine.scaffold import planned_steps, with_mistakes  # noqa: E402
from factory.refine.schemas import from_wire  # noqa: E402
from factory.refine.script import Script  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "simulated_env_agreement.json"
REFINE_SET = Path(__file__).parent / "data" / "refine_replay" / "capable_v1"
PLAYED, PLANNED = ("p0003", "p0041", "p0184"), ("p0212", "p0227")  # the set's first scripts; two more, planned
PROCEDURAL = dict(personas=2, seed=29)
MISTAKES = 3  # injected per planned trajectory (as the refine path's largest usual target)


def recorded(persona_id: str) -> tuple[Script, list[dict]]:
    """A script of the recorded refine set and its first trajectory's moves, as the set holds them."""
    data = json.loads((REFINE_SET / f"{persona_id}.json").read_text())
    first = {r["stage"]: r["reply"] for r in data["replies"] if r["attempt"] == 0}
    return Script(persona_id=persona_id, **first["script"]), [from_wire(s) for s in first["trajectory"]["steps"]]


def planned(script: Script, seed: str) -> list[dict]:
    """The world's shortest plan with mistakes injected at drawn places, each corrected by the next move."""
    return with_mistakes(script, planned_steps(script), MISTAKES, RefineConfig(), random.Random(seed))


def benchmark_cases() -> list[Case]:
    cases = []
    for persona_id in PLAYED:  # the capable model's own moves, judged (and told) by the real world
        script, steps = recorded(persona_id)
        cases.append(Case(f"played:{persona_id}", script, ground_steps(script, [], steps, None)))
    for persona_id in PLANNED:
        script = recorded(persona_id)[0]
        cases.append(Case(f"planned:{persona_id}", script, planned(script, f"29:{persona_id}")))
    for persona in sample_personas(load_library(), PROCEDURAL["personas"], seed=PROCEDURAL["seed"]):
        script = build_script(persona.id, persona.text, seed=0)
        cases.append(Case(f"procedural:{persona.id}", script, planned(script, f"29:{persona.id}")))
    return cases


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local", help="litellm model string, or local / local:/path.gguf")
    parser.add_argument("--base-url")
    parser.add_argument("--replay", type=Path, help="serve this recorded set of simulator replies instead of a model")
    parser.add_argument("--pending", type=Path, help="with --replay: write the prompts the set lacks here")
    parser.add_argument("--run", type=Path, help="measure on this run's verified refine trajectories instead")
    parser.add_argument("--limit", type=int, help="with --run: at most this many trajectories")
    parser.add_argument(
        "--steps", type=int, help="measure N moves, evenly spread over the cases (default: all; 24 on local)"
    )
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--output", type=Path, default=RESULTS)
    return parser.parse_args()


def cases_of(args: argparse.Namespace) -> list[Case]:
    if args.run is None:
        return benchmark_cases()
    from factory.export.selection import open_store

    with closing(open_store(args.run)) as store:
        return store_cases(store, args.limit)


async def measure(config: LLMConfig, cases: list[Case], steps: int | None):
    async with LLMClient(config) as llm:
        agreement = await measure_agreement(WorldSimulator(llm), cases, steps)
        return agreement, llm.counts


def main() -> None:
    args = parse_args()
    cases, server = cases_of(args), None
    if args.replay:
        server = SimulatorReplayServer(args.replay, args.pending)
        args.model, args.base_url = "recorded", server.start_in_thread()
    steps = args.steps if args.steps is not None else 24 if args.model.startswith("local") else None
    config = LLMConfig(model=args.model, base_url=args.base_url, temperature=args.temperature, max_retries=2)
    started = time.perf_counter()
    agreement, counts = asyncio.run(measure(config, cases, steps or None))
    figures = {**agreement.figures(), "seconds": round(time.perf_counter() - started, 1), "calls": counts.calls}
    if server is not None:
        figures["replay"] = {"answered": server.answered, "unanswered": server.missing, "stale_prompts": server.stale}
        server.stop()
    model = f"recorded:{args.replay.stem}" if args.replay else args.model
    sample = f"run {args.run}" if args.run else f"{len(cases)} benchmark trajectories"
    key = f"{model} | {sample} | {str(steps) + ' spread' if steps else 'all'} moves | temperature {args.temperature}"
    report(args.output, key, figures)


if __name__ == "__main__":
    main()
