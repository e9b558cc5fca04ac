"""Write the geo corpus as JSONL (id, title, text) and find it again by name.

    from factory.corpus import build_corpus, resolve_corpus
    path = build_corpus()             # the default place (built once, then reused)
    path = resolve_corpus("geo")      # the same path: any command that takes --corpus accepts "geo"
    path = resolve_corpus("my.jsonl") # a user's own corpus, checked to exist

The default place is `$FACTORY_CORPUS_DIR` or `~/.cache/factory/corpus/`, named with
the corpus version and the source packages' versions, so an upgrade builds a new
file instead of reusing a stale one. The BM25 index sits next to it.
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

import orjson

from ..errors import FactoryError
from .facts import load_world
from .render import render, subdivisions_page

CORPUS_VERSION = 1
NAMES = ("geo",)  # corpora this package builds; a --corpus that is one of these means "the built one"


def corpus_dir() -> Path:
    root = os.environ.get("FACTORY_CORPUS_DIR")
    return Path(root) if root else Path.home() / ".cache" / "factory" / "corpus"


def default_corpus_path() -> Path:
    versions = "-".join(metadata.version(package) for package in ("countryinfo", "pycountry"))
    return corpus_dir() / f"geo-v{CORPUS_VERSION}-{versions}.jsonl"


def corpus_documents() -> list[dict]:
    """Every document of the geo corpus, in a fixed order (by kind, then id)."""
    world = load_world()
    order = ("country", "capital", "currency", "language", "subregion")
    entities = sorted(
        (e for e in world.entities.values() if e.kind in order), key=lambda e: (order.index(e.kind), e.id)
    )
    pages = [render(world, entity) for entity in entities]
    return pages + [subdivisions_page(world, c) for c in world.kind("country") if c.links.get("subdivisions")]


def build_corpus(out: Path | str | None = None, force: bool = False) -> Path:
    """Write the corpus to `out` (default: `default_corpus_path()`); an existing default file is reused."""
    target = Path(out) if out is not None else default_corpus_path()
    if target.exists() and out is None and not force:
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        building = target.with_name(f"{target.name}.building-{os.getpid()}")
        with building.open("wb") as handle:
            for document in corpus_documents():
                handle.write(orjson.dumps(document) + b"\n")
        os.replace(building, target)  # a crash leaves no half corpus under the real name
    except OSError as exc:
        raise FactoryError(f"{target}: cannot write the corpus: {exc.strerror or exc}") from None
    return target


def resolve_corpus(corpus: str | Path) -> Path:
    """A corpus name ("geo": built when missing) or the path of a JSONL/parquet corpus that must exist."""
    if str(corpus) in NAMES:
        return build_corpus()
    path = Path(corpus)
    if not path.is_file():
        raise FactoryError(f"{path}: corpus file not found (give a JSONL/parquet file, or 'geo' for the built one)")
    return path
