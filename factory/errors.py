"""Errors that reach the user as one line that says what to fix."""


class FactoryError(Exception):
    """A user-facing error: the CLI prints its message alone, without a traceback."""


class ConfigError(FactoryError):
    """A config file or option is wrong; the message names the file and field."""


class MissingKeyError(FactoryError):
    """A provider needs an API key that is not in the environment."""
