"""An offline corpus for search tasks, built from facts that ship inside Python packages.

`factory corpus build` writes it; `--corpus geo` anywhere means this built corpus.
See docs/synthesis.md.
"""

from .build import NAMES, build_corpus, corpus_documents, default_corpus_path, resolve_corpus
from .facts import Entity, World, load_world

__all__ = [
    "NAMES",
    "Entity",
    "World",
    "build_corpus",
    "corpus_documents",
    "default_corpus_path",
    "load_world",
    "resolve_corpus",
]
