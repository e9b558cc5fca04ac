"""factory: a synthetic agent-trajectory data factory.

Everything the CLI does is callable from here:

    import factory
    config = factory.FactoryConfig()            # or factory.load_factory_config("run.yaml")
    outcome = factory.run_smoke(config)
    print(factory.format_call_summary(factory.summarize_calls(config.run_dir)))
"""

from .errors import ConfigError, FactoryError, MissingKeyError
from .llm import LLMClient, LLMConfig, Request, Result
from .llm.call_summary import format_call_summary, summarize_calls
from .run import open_run
from .run_config import FactoryConfig, load_factory_config
from .smoke import ping, run_smoke
from .store import Store
from .version import __version__

__all__ = [
    "ConfigError", "FactoryConfig", "FactoryError", "LLMClient", "LLMConfig", "MissingKeyError", "Request",
    "Result", "Store", "format_call_summary", "load_factory_config", "open_run", "ping", "run_smoke",
    "summarize_calls", "__version__",
]  # fmt: skip
