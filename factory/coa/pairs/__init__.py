"""factory.coa.pairs: AutoCoA's SFT stage 1 data, "when to act" preference pairs, from coa trajectories.

At the point where a verified coa trajectory first calls a tool, the model is asked to answer
from recall instead (the same prompt, no tool), laid out in the grammar the trajectory's variant
follows (plan, double check: everything but the tool); the task's checker judges that answer:

- wrong: `when_to_act` (chosen: the tool call the trajectory made; rejected: the recall answer);
- right, its own double check sure (score >= 3), and the closed-book rollouts (`factory passrate`)
  say the model knows it: `when_not_to_act` (chosen: the direct answer; rejected: the tool call);
- otherwise no pair, with the reason counted.

    outcome = make_pairs(config, PairsConfig(min_pass_rate=0.8, min_rollouts=8))

Rows go to `preference_pairs` (source 'coa'); the preference exports read them. docs/when_to_act.md.
"""

from ...lazy_exports import lazy_exports

# The public API, imported on first use (factory/lazy_exports.py says why).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".config": ("PairsConfig",),
        ".job": ("PairsError", "PairsOutcome", "amake_pairs", "make_pairs"),
        ".rule": ("KINDS", "Decision", "decide"),
    },
)

__all__ = ["KINDS", "Decision", "PairsConfig", "PairsError", "PairsOutcome", "amake_pairs", "decide", "make_pairs"]
