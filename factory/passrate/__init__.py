"""factory.passrate: pass-rate sampling for RL data.

For each task (query), sample N rollouts from a policy model through
factory.llm, check each with factory.checks (math-verify, sandboxed code tests,
EM/F1), and store every rollout in the `rollouts` table; then read pass rates
per task in SQL. Queries a policy always or never solves teach RL nothing, so
the `pass_rate` filter keeps the hard-but-possible ones.

    summary = ensure_rollouts(store, tasks, LLMConfig(model="qwen", base_url="http://gpu:8000/v1"), n=32)
    table = pass_rates(store, "qwen")     # task_id, n, n_correct, n_failed, pass_rate, uniform
    totals = summarize(store, "qwen", threshold=0.3)

On the command line: `factory passrate RUN_DIR --tasks FILE --model M --n 32 [--base-url URL]`.
"""

from ..lazy_exports import lazy_exports

# The public API, imported on first use (factory/lazy_exports.py says why).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".config": ("PassrateConfig",),
        ".rates": ("pass_rates", "summarize"),
        ".sampler": ("PassrateError", "aensure_rollouts", "ensure_rollouts"),
    },
)

__all__ = ["PassrateConfig", "PassrateError", "aensure_rollouts", "ensure_rollouts", "pass_rates", "summarize"]
