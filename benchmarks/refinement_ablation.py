"""AgentRefine's ablation in miniature: does training on corrected mistakes, masked, make a better agent?

    python benchmarks/refinement_ablation.py                         # toy: embedded SmolLM2 GGUF, recorded refine set
    python benchmarks/refinement_ablation.py --data outputs/export/sharegpt --base /models/Qwen2.5-1.5B-Instruct \\
        --train-steps 300 --learning-rate 1e-5 --env babyai --env textworld --seeds 1-20 --max-steps 20

The same refine rows (a sharegpt export: `--data`, default the recorded
capable-model set in benchmarks/data/refine_replay run through `factory refine`
and `factory export`) train the same base model (`--base`: a GGUF, dequantized
through transformers' `gguf_file=`, default the embedded SmolLM2-135M; or a
transformers folder) three ways — `masked` (ours: mistake turns in context, out
of the loss), `trained` (mistake turns trained), `removed` (mistake turns and
their observations dropped) — with `train.sft`, then each checkpoint and the
untrained base play `factory eval --env` on the same held-out seeds. Figures
(data size, train loss, success, progress, format errors) go to
benchmarks/results/refinement_ablation.json under a key naming the settings.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ablation_data import ROOT, hf_base, mistake_turns, read_rows, replay_export, scratch, write_variants
from results_file import report

sys.path.insert(0, str(ROOT))

from factory.cli import build_parser  # noqa: E402
from factory.evaluate.envs.command import seed_list  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "refinement_ablation.json"
TRAIN_CONFIG = ROOT / "examples" / "train_tiny.yaml"  # every field the runs need is overridden below


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="sharegpt export (file or folder); default: the recorded refine set")
    parser.add_argument("--base", help="a .gguf or a transformers folder (default: the embedded SmolLM2-135M GGUF)")
    parser.add_argument("--env", action="append", help="held-out environment names (default: babyai:GoToRedBallGrey)")
    parser.add_argument("--seeds", type=seed_list, default=[1, 2], help="held-out seeds, e.g. 1-20 (default 1,2)")
    parser.add_argument("--max-steps", type=int, default=3, help="player turns per episode")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--train-steps", type=int, default=4)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--max-seq-length", type=int, default=1024)
    parser.add_argument("--rows", type=int, help="use only the first N rows (toy runs)")
    parser.add_argument("--work-dir", help="keep data, checkpoints and results here (default: a temporary folder)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    return parser.parse_args()


def train_variant(args: argparse.Namespace, base: Path, data: Path, out: Path) -> dict:
    from train.config import load_config
    from train.sft import train

    overrides = {"model.path": base, "model.attn_implementation": "sdpa", "data.train": f"[{data}]",
                 "data.validation": "[]", "data.validation_fraction": 0, "data.max_seq_length": args.max_seq_length,
                 "optim.max_steps": args.train_steps, "optim.learning_rate": args.learning_rate,
                 "optim.batch_size": 1, "optim.grad_accum": 1, "optim.warmup_steps": 0, "save_steps": 0,
                 "eval_steps": 0, "output_dir": out, "resume": "false"}  # fmt: skip
    flags = [item for key, value in overrides.items() for item in (f"--{key}", str(value))]
    metrics = train(load_config(str(TRAIN_CONFIG), flags))
    return {"train_loss": metrics["train_loss"], "train_rows": metrics["train_rows"],
            "checkpoint": metrics["checkpoint"]}  # fmt: skip


def evaluate(args: argparse.Namespace, model: Path, run_dir: Path) -> dict:
    from factory.evaluate.command import run_eval

    argv = ["eval", str(run_dir), "--model", str(model), "--seeds", ",".join(map(str, args.seeds)),
            "--max-steps", str(args.max_steps), "--max-new-tokens", str(args.max_new_tokens)]  # fmt: skip
    for env in args.env or ["babyai:GoToRedBallGrey"]:
        argv += ["--env", env]
    results, path = run_eval(build_parser().parse_args(argv))
    overall = results.overall
    return {"success_rate": overall["success_rate"], "progress_rate": round(overall["progress_rate"], 3),
            "format_errors": overall["format_errors"], "steps": overall["steps"], "results_file": str(path)}  # fmt: skip


def main() -> None:
    args = parse_args()
    work, started = scratch(args.work_dir), time.perf_counter()
    rows = read_rows(args.data or replay_export(work))[: args.rows]
    if not rows:
        sys.exit("error: no sharegpt rows with conversations in the data")
    variants = write_variants(rows, work / "variants")
    if args.base is None:
        from factory.llm.local import default_gguf

        args.base = str(default_gguf())
    base = hf_base(args.base, work)
    figures = {"data": {"rows": len(rows), "mistake_turns": sum(map(mistake_turns, rows)),
                        "source": str(args.data or "benchmarks/data/refine_replay/capable_v1")}}  # fmt: skip
    figures["base"] = evaluate(args, base, work / "eval")
    for kind, path in variants.items():
        trained = train_variant(args, base, path, work / "train" / kind)
        figures[kind] = {**trained, **evaluate(args, Path(trained["checkpoint"]), work / "eval")}
    figures["seconds"] = round(time.perf_counter() - started, 1)
    envs = ",".join(args.env or ["babyai:GoToRedBallGrey"])
    key = (f"{Path(args.base).name} | {len(rows)} rows | {args.train_steps} steps lr {args.learning_rate} | "
           f"{envs} seeds {','.join(map(str, args.seeds))} | max_steps {args.max_steps}")  # fmt: skip
    report(args.output, key, figures)


if __name__ == "__main__":
    main()
