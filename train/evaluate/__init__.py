"""train/evaluate: a model as the player in held-out AgentRefine environments.

    from train.evaluate import load_environments, evaluate, HFPlayer, LLMPlayer, llm_config
    selection = load_environments("outputs/refine", exclude_train=["outputs/export/"])
    report = evaluate(selection, HFPlayer.from_pretrained("outputs/sft/final"), max_steps=20)
    print(format_report(report)); write_report(report, "outputs/refine")

environments.py / heldout.py choose the environments, dialogue.py is the text
the player reads and writes, loop.py is the DM, players.py the models,
metrics.py the scores, report.py the JSON file and table, command.py the CLI.
See docs/eval.md.
"""

from .environments import Environment, Exclusion, NoEnvironmentsError, Selection, load_environments, select_environments
from .loop import EvalReport, evaluate, evaluate_async, play_episode
from .metrics import EpisodeResult
from .players import HFPlayer, LLMPlayer, Player, PlayerError, llm_config
from .report import format_report, write_report

__all__ = [
    "EpisodeResult", "Environment", "EvalReport", "Exclusion", "HFPlayer", "LLMPlayer", "NoEnvironmentsError",
    "Player", "PlayerError", "Selection", "evaluate", "evaluate_async", "format_report", "llm_config",
    "load_environments", "play_episode", "select_environments", "write_report",
]  # fmt: skip
