"""The factory's version, in a module of its own: the CLI and the report's footer read it without
importing the whole package (factory/__init__.py imports the run config and, through it, every stage's config)."""

__version__ = "0.1.0"
