"""factory.smoke: a few structured responses through the full LLM path (`factory smoke`), and `factory ping`.

outcome = run_smoke(config)     # config: a FactoryConfig; its smoke: section says how many
result = ping(config)           # one structured call
"""

from .job import ping, run_smoke

__all__ = ["ping", "run_smoke"]
