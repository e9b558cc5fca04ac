"""The dry run's estimate (`--dry-run`, issue 17): what refine, coa and passrate would send, in requests, tokens and
cost, from the stages' real prompts, with nothing sent and nothing written.

    estimates, summary = estimate_stages(config, ["refine", "passrate"], (passrate_settings, policy))
    Pricing(per_token, source, multiplier=0.5).cost(prompt_tokens, completion_tokens)   # a discounted mode
"""

from ..lazy_exports import lazy_exports

# The public API, imported on first use (factory/lazy_exports.py says why).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".command": ("estimate_stages",),
        ".pricing": ("Pricing", "pricing_for"),
    },
)

__all__ = ["Pricing", "estimate_stages", "pricing_for"]
