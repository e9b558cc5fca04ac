"""How each format's rows are written, per split: SQL formats through DuckDB's COPY, the trainer-specific
ones (llamafactory, trl) with what their trainers need beside the rows."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Callable

from ..store import Store
from .formats import FORMAT_SQL
from .lengths import measure
from .llamafactory import llamafactory_mode, llamafactory_sql, write_dataset_info
from .options import ExportOptions, FormatName
from .trl import load_export_tokenizer, rendered_rows, write_trl_split
from .writers import write_split

SplitWriter = Callable[[str, Path], tuple[int, list[Path]]]  # (split, staging folder) -> (rows, files)


def unavailable(name: FormatName, options: ExportOptions) -> str | None:
    """Why a format cannot be written with these options (checked before any work), or None."""
    if name == "trl" and not options.tokenizer:
        return "the trl format is pre-tokenized: name the tokenizer (--tokenizer PATH_OR_NAME)"
    return None


def split_writer(
    store: Store, name: FormatName, selection: str, options: ExportOptions, settings: dict[str, Any]
) -> SplitWriter:
    """A writer for one format's splits; `settings` receives what the trainer's config must say (e.g. the mode)."""
    if name == "trl":
        tokenizer = load_export_tokenizer(options.tokenizer)
        skipped: Counter = settings.setdefault("skipped", Counter())
        settings.update(tokenizer=options.tokenizer, max_length=options.max_length)
        return lambda split, folder: write_trl_split(
            rendered_rows(store, selection, split, tokenizer, options, skipped), split, folder, options
        )
    if name == "llamafactory":
        settings["mode"] = llamafactory_mode(store, selection)
        sql = llamafactory_sql(selection, settings["mode"])
    else:
        sql = FORMAT_SQL[name](selection)
    return lambda split, folder: write_split(store, sql, split, folder, options)


def finish_format(
    name: FormatName, staging: Path, files: dict[str, list[Path]], settings: dict[str, Any], options: ExportOptions
) -> None:
    """What a trainer reads beside the shards: LLaMA-Factory's dataset_info.json (AFM's fork reads the same
    file), and the longest sample, so the config's cutoff_len can hold every sample whole."""
    settings["splits"] = list(files)
    if name not in ("llamafactory", "afm") or not files:
        return
    settings["datasets"] = write_dataset_info(staging, files, "sharegpt" if name == "llamafactory" else "alpaca")
    staged = [staging / path.name for paths in files.values() for path in paths]
    tokenizer = load_export_tokenizer(options.tokenizer) if options.tokenizer else None
    settings.update(measure(staged, name, options.file_type, tokenizer), tokenizer_name=options.tokenizer)


def skipped_note(name: FormatName, settings: dict[str, Any]) -> str | None:
    skipped = settings.get("skipped")
    if not skipped:
        return None
    reasons = "; ".join(f"{count} {reason}" for reason, count in skipped.most_common())
    return f"{name}: {sum(skipped.values())} row(s) left out ({reasons})"
