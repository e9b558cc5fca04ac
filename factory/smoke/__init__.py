"""factory.smoke: a few structured responses through the full LLM path (`factory smoke`), and `factory ping`.

outcome = run_smoke(config)     # config: a FactoryConfig; its smoke: section says how many
result = ping(config)           # one structured call
"""

from ..lazy_exports import lazy_exports

# The public API, imported on first use (factory/lazy_exports.py says why).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".job": ("ping", "run_smoke"),
    },
)

__all__ = ["ping", "run_smoke"]
