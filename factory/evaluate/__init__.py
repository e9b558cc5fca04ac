"""factory/evaluate: a model as the player in held-out AgentRefine environments.

    from factory.evaluate import load_environments, evaluate, HFPlayer, LLMPlayer, llm_config
    selection = load_environments("outputs/refine", exclude_train=["outputs/export/"])
    results = evaluate(selection, HFPlayer.from_pretrained("outputs/sft/final"), max_steps=20)
    print(format_results(results)); write_results(results, "outputs/refine")

environments.py / heldout.py choose the environments, loop.py plays them
(the refine world env and text game of factory/envs, which RL rollouts play
too), players.py the models, metrics.py the scores, results.py the JSON file
and table, command.py the CLI. See docs/eval.md and docs/environments.md.
"""

from .environments import Environment, Exclusion, NoEnvironmentsError, Selection, load_environments, select_environments
from .loop import EvalResults, evaluate, evaluate_async, play_episode
from .metrics import EpisodeResult
from .players import HFPlayer, LLMPlayer, Player, PlayerError, llm_config
from .results import format_results, write_results

__all__ = [
    "EpisodeResult", "Environment", "EvalResults", "Exclusion", "HFPlayer", "LLMPlayer", "NoEnvironmentsError",
    "Player", "PlayerError", "Selection", "evaluate", "evaluate_async", "format_results", "llm_config",
    "load_environments", "play_episode", "select_environments", "write_results",
]  # fmt: skip
