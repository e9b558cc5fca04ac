"""factory: a synthetic agent-trajectory data factory.

Everything the CLI does is callable from here:

    import factory
    config = factory.FactoryConfig()            # or factory.load_factory_config("run.yaml")
    outcome = factory.run_smoke(config)
    print(factory.format_call_summary(factory.summarize_calls(config.run_dir)))
"""

__version__ = "0.1.0"

from .errors import ConfigError, FactoryError, MissingKeyError  # noqa: E402
from .llm import LLMClient, LLMConfig, Request, Result  # noqa: E402
from .llm.call_summary import format_call_summary, summarize_calls  # noqa: E402
from .run import open_run  # noqa: E402
from .settings import FactoryConfig, load_factory_config  # noqa: E402
from .smoke import ping, run_smoke  # noqa: E402
from .store import Store  # noqa: E402

__all__ = [
    "ConfigError", "FactoryConfig", "FactoryError", "LLMClient", "LLMConfig", "MissingKeyError", "Request",
    "Result", "Store", "format_call_summary", "load_factory_config", "open_run", "ping", "run_smoke",
    "summarize_calls",
]  # fmt: skip
