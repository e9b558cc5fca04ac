"""factory: a synthetic agent-trajectory data factory.

Everything the CLI does is callable from here:

    import factory
    config = factory.FactoryConfig()            # or factory.load_factory_config("run.yaml")
    outcome = factory.run_smoke(config)
    print(factory.format_call_summary(factory.summarize_calls(config.run_dir)))
"""

from .lazy_exports import lazy_exports

# The public API, imported on first use (factory/lazy_exports.py says why).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".errors": ("ConfigError", "FactoryError", "MissingKeyError"),
        ".llm": ("LLMClient", "LLMConfig", "Request", "Result"),
        ".llm.call_summary": ("format_call_summary", "summarize_calls"),
        ".run": ("open_run",),
        ".run_config": ("FactoryConfig", "load_factory_config"),
        ".smoke": ("ping", "run_smoke"),
        ".store": ("Store",),
        ".version": ("__version__",),
    },
)

__all__ = [
    "ConfigError", "FactoryConfig", "FactoryError", "LLMClient", "LLMConfig", "MissingKeyError", "Request",
    "Result", "Store", "format_call_summary", "load_factory_config", "open_run", "ping", "run_smoke",
    "summarize_calls", "__version__",
]  # fmt: skip
