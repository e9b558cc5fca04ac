"""Errors that reach the user as one line that says what to fix."""


class FactoryError(Exception):
    """A user-facing error: the CLI prints its message alone, without a traceback."""


class ConfigError(FactoryError):
    """A config file or option is wrong; the message names the file and field."""


class MissingKeyError(FactoryError):
    """A provider needs an API key that is not in the environment."""


class SendingStopped(FactoryError):
    """The LLM client sends nothing more: the batch ends with this one line, keeping every answer it has
    (a batch driver re-raises it instead of recording it as one task's failure)."""


class StoreWriteError(SendingStopped):
    """The run store (or its call journal) could not be written, e.g. the disk is full.
    The LLM client stops sending: a batch that goes on would pay for answers it cannot keep."""


class SpendCapReached(SendingStopped):
    """The spend recorded in the run store reached `llm.max_cost_usd`; calls in flight finish and are kept."""


class MissingExtraError(FactoryError):
    """A command needs an optional dependency group that is not installed."""


def require_train_extra(what: str) -> None:
    """Fail with one line, not an ImportError traceback, when torch/transformers are missing."""
    import importlib.util

    for module in ("torch", "transformers"):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a module blocked in sys.modules, or a broken install
            found = False
        if not found:
            raise MissingExtraError(
                f"{what} needs the [train] extra ({module} is not installed): "
                "pip install torch==2.13.0 'factory[train]' (see README)"
            )
