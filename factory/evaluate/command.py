"""`factory eval RUN_DIR --model PATH_OR_MODEL`: a model as the player in held-out environments.

    factory eval outputs/refine --model outputs/sft/final            # a transformers checkpoint folder
    factory eval outputs/refine --gguf model.Q4_K_M.gguf             # the embedded llama.cpp server
    factory eval outputs/refine --model openai/gpt-4o-mini           # any API model (factory.llm)
    factory eval outputs/refine --model qwen --base-url http://127.0.0.1:8000/v1 --exclude-train data/
    factory eval outputs/heldout --env babyai --env textworld --gguf model.gguf    # real environments (envs/)

Wired into factory/cli.py with `add_eval_parser(subparsers)`; `cmd_eval(args)` returns the exit code.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from factory.cli_options import flag_overrides, with_overrides
from factory.config import StrictModel, load_yaml_config
from factory.errors import FactoryError
from factory.run import open_run
from factory.store import STORE_FILENAME

from .environments import load_environments
from .envs.command import add_env_arguments, run_env_eval
from .loop import evaluate
from .players import HFPlayer, LLMPlayer, llm_config
from .results import format_results, write_results


class EvalSettings(StrictModel):
    """`factory eval` settings; a YAML file of these keys may be given with --config."""

    max_steps: int = Field(20, ge=1, le=500, description="player turns per environment")
    concurrency: int = Field(8, ge=1, le=1024, description="environments played at once")
    loop_k: int = Field(3, ge=2, description="identical invalid replies in a row that count as a loop")
    validation_code: bool = Field(True, description="also ask actions' validation code (sandbox), as the verifier does")
    max_new_tokens: int = Field(256, ge=1, description="reply length limit per turn")
    temperature: float = Field(0.0, ge=0, le=2, description="0: greedy")
    batch_size: int = Field(8, ge=1, description="HF checkpoints: turns generated together")
    limit: int | None = Field(None, ge=1, description="evaluate only the first N held-out environments")
    tool_calls: Literal["text", "native"] = Field(
        "text",
        description="how the player acts: Thought/Action text (the text exports), or native tool calls "
        "(the actions as tools; for a model trained on the native exports)",
    )


FLAGS = ("max_steps", "concurrency", "loop_k", "max_new_tokens", "temperature", "batch_size", "limit", "tool_calls")


def add_eval_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "eval", help="play a model in held-out refine environments; report success and mistakes"
    )
    parser.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        help="run folder: its verified scripts are the environments (unless --env), results go to RUN_DIR/eval/",
    )
    parser.add_argument(
        "--model", help="a transformers checkpoint folder, a .gguf file, or a model string for factory.llm"
    )
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint serving --model")
    parser.add_argument("--api-key-env", help="environment variable holding the key for --base-url")
    parser.add_argument("--gguf", help="a GGUF file to play through the embedded llama.cpp server")
    parser.add_argument(
        "--scripts", help="take environments from this JSONL/JSON/parquet of scripts instead of the store"
    )
    parser.add_argument(
        "--exclude-train",
        action="append",
        default=[],
        metavar="DATA",
        help="exported training data (file or folder); its script_ids are not evaluated (repeatable)",
    )
    parser.add_argument("-c", "--config", help="YAML file of eval settings (the flags below override it)")
    parser.add_argument("--max-steps", type=int, help="player turns per environment (default 20)")
    parser.add_argument("--concurrency", type=int, help="environments played at once (default 8)")
    parser.add_argument("--loop-k", type=int, help="identical invalid replies in a row that make a loop (default 3)")
    parser.add_argument("--max-new-tokens", type=int, help="reply length limit per turn (default 256)")
    parser.add_argument("--temperature", type=float, help="sampling temperature (default 0: greedy)")
    parser.add_argument("--batch-size", type=int, help="HF checkpoints: turns generated together (default 8)")
    parser.add_argument("--limit", type=int, help="evaluate only the first N held-out environments")
    parser.add_argument("--no-validation-code", action="store_true", help="judge by the declarative rules only")
    parser.add_argument(
        "--tool-calls",
        choices=["text", "native"],
        help="native: the actions as tools, a call read as the model family writes it",
    )
    add_env_arguments(parser)
    parser.set_defaults(func=cmd_eval)
    return parser


def settings_from(args: argparse.Namespace) -> EvalSettings:
    base = load_yaml_config(EvalSettings, args.config) if args.config else EvalSettings()
    overrides = flag_overrides(args, FLAGS)
    if args.no_validation_code:
        overrides["validation_code"] = False
    return with_overrides(base, overrides)


@dataclass(frozen=True)
class PlayerChoice:
    """Who plays: a transformers checkpoint folder, a GGUF file, or a model for factory.llm (at base_url)."""

    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    gguf: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "PlayerChoice":
        return cls(args.model, args.base_url, args.api_key_env, args.gguf)


def make_player(choice: PlayerChoice, settings: EvalSettings, store=None, run_id=None):
    """An HF checkpoint folder plays in-process; a GGUF, an API model or a base URL through factory.llm."""
    model = choice.model
    if choice.gguf or (model and model.endswith(".gguf") and Path(model).is_file()):
        gguf = Path(choice.gguf or model)
        if not gguf.is_file():
            raise FactoryError(f"--gguf {gguf}: no such file")
        model = f"local:{gguf.resolve()}"
    elif model and not choice.base_url and Path(model).is_dir():
        return HFPlayer.from_pretrained(model, max_new_tokens=settings.max_new_tokens,
                                        temperature=settings.temperature, batch_size=settings.batch_size)  # fmt: skip
    if not model:
        raise FactoryError("give the player: --model PATH_OR_MODEL or --gguf FILE")
    config = llm_config(model, choice.base_url, settings.max_new_tokens, settings.temperature, settings.concurrency,
                        api_key_env=choice.api_key_env)  # fmt: skip
    return LLMPlayer(config, store, run_id)


def cmd_eval(args: argparse.Namespace) -> int:
    results, path = run_eval(args)
    print(format_results(results))
    print(f"results: {path}")
    return 0


def run_eval(args: argparse.Namespace):
    """Play the held-out environments (the arguments as the `eval` parser gives them); (results, results path)."""
    settings, choice = settings_from(args), PlayerChoice.from_args(args)
    if getattr(args, "env", None):
        return run_env_eval(args, settings, lambda store, run_id: make_player(choice, settings, store, run_id))
    return evaluate_run(Path(args.run_dir), choice, settings, args.scripts, args.exclude_train)


def evaluate_run(run_dir: Path, choice: PlayerChoice, settings: EvalSettings, scripts: str | None = None,
                 exclude_train: Sequence[str] = ()):  # fmt: skip
    """Play a refine run's held-out scripts (or those of `scripts`, a file); (results, results path)."""
    if scripts is None and not (run_dir / STORE_FILENAME).exists():
        raise FactoryError(f"{run_dir}: no run store ({STORE_FILENAME}); give a refine run folder or --scripts FILE")
    with open_run(run_dir, "eval", settings) as run:
        selection = load_environments(scripts_file=scripts, exclude_train=list(exclude_train), store=run.store)
        if settings.limit is not None:
            selection.environments = selection.environments[: settings.limit]
        player = make_player(choice, settings, run.store, run.run_id)
        results = evaluate(selection, player, settings.max_steps, settings.concurrency, settings.loop_k,
                           settings.validation_code, settings.tool_calls == "native")  # fmt: skip
        path = write_results(results, run_dir, {"run_id": run.run_id, "scripts": scripts})
    return results, path
