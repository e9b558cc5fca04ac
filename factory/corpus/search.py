"""`--corpus NAME_OR_FILE` on coa and tasks expand: the local web_search backend over that corpus."""

from __future__ import annotations

import argparse

from ..cli_options import with_overrides


def with_corpus_search(config, args: argparse.Namespace):
    """The run config with web_search on the local backend over --corpus (after the model checks: "--corpus
    geo" builds the corpus on first use, which a bad model name should not wait for)."""
    if not getattr(args, "corpus", None):
        return config
    from .build import NAMES, resolve_corpus

    path = str(resolve_corpus(args.corpus)) if args.corpus in NAMES else args.corpus
    web_search = {"enabled": True, "backend": "local", "local": {"path": path}}
    return with_overrides(config, {"coa.tools.web_search": web_search}, flags={"coa.tools": "--corpus"})
