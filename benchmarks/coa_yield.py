"""Yield of the Chain-of-Agents path on a given model: what a kept AFM trajectory costs.

    python benchmarks/coa_yield.py                                   # embedded SmolLM2, 3 math500 tasks
    python benchmarks/coa_yield.py --tasks ../shared/data/tasks/nq.parquet --count 10 --corpus wiki.jsonl
    python benchmarks/coa_yield.py --model openai/gpt-4o-mini --count 20           # auto: the paper-sized settings
    python benchmarks/coa_yield.py --replay benchmarks/data/coa_replay/capable_v1  # a recorded capable model

Runs `factory coa` in-process into a fresh run folder (cache off unless --cache)
and reads the store afterwards:

- the funnel (tasks -> answered -> grammar-valid distillations -> correct) and
  the tasks lost, by run status or grammar rule;
- tool calls per task (by tool), LLM calls per task;
- prompt + completion tokens and wall seconds per kept (distilled) trajectory
  and per correct one; the correctness rate of kept trajectories;
- the grammar-valid rate of stored distillations, re-checked here with the AFM
  validator (target: 100%; anything less is a bug in the distiller).

By default the benchmark runs what `factory coa --count 3` runs: every coa
setting left auto, resolved by the model (factory/coa/defaults.py: small reply
bounds, token caps, steps and re-plans on the embedded model). Pass --max-steps,
--max-replans, --max-tokens, --max-tokens-cap or --reply-chars to measure other
settings (`--reply-chars full --max-steps 6 --max-replans 2 --max-tokens 1024
--max-tokens-cap 8192` are the settings before issue 15, whatever the model).
Figures are printed and merged into benchmarks/results/coa_yield.json under a
key naming the model and settings.

With --replay DIR the model is a recorded set of a capable model's replies to the
real prompts, served over loopback HTTP (tests/coa_replay.py; the set's README says
how it was recorded), and the figures are what a trainer keeps of it: the share of
correct trajectories the shipped filters keep (synthesized and seed tasks apart, and
how many pass AFM's >= 5 tool calls), tool calls per kept trajectory (median and
histogram), LLM calls and tokens per kept trajectory (tokens estimated at 4 characters
a token: the replies were not metered), the grounded-claim share, the most frequent
openings of trained thoughts and reflections, the distiller's phrases, and the
closed-book pass rate the set recorded for its qa tasks (tests/coa_replay_run.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from results_file import per, report, timed_run

from factory.coa import run_coa
from factory.coa.afm import validate_afm
from factory.coa.distill import answer_format
from factory.run_config import FactoryConfig
from factory.store import Store

RESULTS = Path(__file__).parent / "results" / "coa_yield.json"
SHARED_MATH = Path(__file__).resolve().parents[2] / "shared" / "data" / "tasks" / "math500.parquet"
REPLY_CHARS = {  # coa.reply_chars presets
    "auto": {},  # by the model, as factory coa
    "small": {"think": 240, "code": 400, "answer": 120, "comment": 160},
    "full": {"think": 800, "code": 3000, "answer": 4000, "comment": 600},
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local", help="litellm model string, or local / local:/path.gguf")
    parser.add_argument("--base-url")
    parser.add_argument("--tasks", default=str(SHARED_MATH), help="task file (verl/AFM rows or plain QA)")
    parser.add_argument("--count", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variant", choices=["auto", "mas", "code"], default="auto")
    parser.add_argument("--max-steps", type=int, help="tool calls per task (default: auto)")
    parser.add_argument("--max-replans", type=int, help="(default: auto)")
    parser.add_argument("--max-tokens", type=int, help="completion tokens per coa call (default: auto)")
    parser.add_argument("--max-tokens-cap", type=int, help="ceiling of a cut-off call's retry (default: auto)")
    parser.add_argument("--task-timeout-s", type=float, help="wall-clock seconds per task (default: auto)")
    parser.add_argument("--reply-chars", choices=sorted(REPLY_CHARS), default="auto")
    parser.add_argument("--corpus", help="JSONL/parquet corpus for web_search (qa tasks)")
    parser.add_argument("--cache", action="store_true", help="reuse cached calls (default: every call is fresh)")
    parser.add_argument("--run-dir", help="keep the run here (default: a temporary folder)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--replay", type=Path, help="replay this recorded set of capable-model replies instead")
    return parser.parse_args()


def build_config(args: argparse.Namespace, run_dir: str) -> FactoryConfig:
    llm = {"model": args.model, "cache": args.cache, **({"base_url": args.base_url} if args.base_url else {})}
    coa = {
        "tasks": args.tasks,
        "count": args.count,
        "seed": args.seed,
        "variant": args.variant,
        "reply_chars": REPLY_CHARS[args.reply_chars],
        **{name: value for name, value in explicit_settings(args).items() if value is not None},
    }
    if args.corpus:
        coa["tools"] = {"web_search": {"enabled": True, "backend": "local", "local": {"path": args.corpus}}}
    return FactoryConfig.model_validate({"run_dir": run_dir, "llm": llm, "coa": coa})


def explicit_settings(args: argparse.Namespace) -> dict:
    return {
        "max_steps": args.max_steps,
        "max_replans": args.max_replans,
        "max_tokens": args.max_tokens,
        "max_tokens_cap": args.max_tokens_cap,
        "task_timeout_s": args.task_timeout_s,
    }


def settings_key(args: argparse.Namespace) -> str:
    """The results key: "default" when every setting is left auto (the figure the README quotes)."""
    given = {name: value for name, value in explicit_settings(args).items() if value is not None}
    if args.reply_chars != "auto":
        given["reply_chars"] = args.reply_chars
    return " ".join(f"{name}={value}" for name, value in given.items()) or "settings=default"


def regrammar(store: Store) -> dict:
    """Re-validate every stored (verified) distillation: the target is 100% valid."""
    rows = store.query(
        "SELECT t.completion, t.variant, c.domain FROM trajectories t JOIN coa_traces c USING (trace_id) "
        "WHERE t.source = 'coa' AND t.verified"
    )
    broken = Counter(
        verdict.rule
        for completion, variant, domain in rows
        if not (verdict := validate_afm(completion, variant, answer_format(variant, domain))).ok
    )
    return {
        "stored": len(rows),
        "valid": len(rows) - sum(broken.values()),
        "valid_rate": round(1 - sum(broken.values()) / len(rows), 3) if rows else None,
        "broken": dict(broken),
    }


def tool_calls(store: Store) -> dict:
    by_type: Counter = Counter()
    for (events,) in store.query("SELECT events FROM coa_traces WHERE source = 'mas'"):
        by_type.update(e["tool"]["name"] for e in json.loads(events) if e.get("kind") == "tool_call" and e.get("tool"))
    (tasks,) = store.query("SELECT count(*) FROM coa_traces WHERE source = 'mas'")[0]
    return {"per_task": per(sum(by_type.values()), tasks), "by_type": dict(by_type)}


def measure(store: Store, funnel: dict[str, int], failures: dict[str, int], seconds: float) -> dict:
    calls, prompt_tokens, completion_tokens = store.query(
        "SELECT count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0) FROM llm_calls"
    )[0]
    tokens = prompt_tokens + completion_tokens
    kept, correct = funnel["distilled"], funnel["correct"]
    return {
        "funnel": funnel,
        "lost_by_rule_or_status": failures,
        "tool_calls": tool_calls(store),
        "llm_calls_per_task": per(calls, funnel["tasks"]),
        "tokens": {"prompt": prompt_tokens, "completion": completion_tokens},
        "tokens_per_kept": per(tokens, kept),
        "tokens_per_correct": per(tokens, correct),
        "seconds": round(seconds, 1),
        "seconds_per_kept": per(seconds, kept),
        "seconds_per_correct": per(seconds, correct),
        "correct_rate_of_kept": round(correct / kept, 3) if kept else None,
        "grammar": regrammar(store),
    }


def run_replay(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from coa_replay_run import replay_figures

    with tempfile.TemporaryDirectory(prefix="coa_replay_") as folder:
        started = time.monotonic()
        figures = replay_figures(args.replay, Path(args.run_dir or folder) / "run")
    figures["seconds"] = round(time.monotonic() - started, 1)
    report(args.output, f"replay:{args.replay.name}", figures)


def main() -> None:
    args = parse_args()
    if args.replay:
        return run_replay(args)

    def run(run_dir: str):
        return run_coa(build_config(args, run_dir), progress=True)

    def measured(store: Store, outcome, seconds: float) -> dict:
        return measure(store, outcome.funnel, outcome.failures, seconds)

    figures = timed_run(args.run_dir, "coa_yield_", run, measured)
    key = (
        f"{args.model} tasks={Path(args.tasks).name} variant={args.variant} {settings_key(args)} "
        f"count={args.count} seed={args.seed}"
    )
    report(args.output, key, figures)


if __name__ == "__main__":
    main()
