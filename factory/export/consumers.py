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
from .llamafactory_native import SCHEMA as NATIVE_LF_SCHEMA
from .llamafactory_native import native_samples
from .observations import observations_unavailable
from .openai_format import SCHEMA as NATIVE_SCHEMA
from .openai_format import native_rows
from .options import ExportOptions, FormatName
from .registry import format_spec
from .stream import write_stream
from .trl import load_export_tokenizer, rendered_rows, write_trl_split
from .writers import write_split

SplitWriter = Callable[[str, Path], tuple[int, list[Path]]]  # (split, staging folder) -> (rows, files)


def unavailable(name: FormatName, options: ExportOptions) -> str | None:
    """Why a format cannot be written with these options (checked before any work), or None."""
    spec = format_spec(name)
    if spec.needs and not getattr(options, spec.needs):
        return spec.needs_message
    return observations_unavailable(name, options.observations)


def split_writer(
    store: Store, name: FormatName, selection: str, options: ExportOptions, settings: dict[str, Any]
) -> SplitWriter:
    """A writer for one format's splits (registry.py names it); `settings` receives what the trainer's config
    must say (e.g. the mode)."""
    return format_spec(name).split_writer(store, name, selection, options, settings)


def sql_writer(store: Store, name: FormatName, selection: str, options: ExportOptions, settings: dict) -> SplitWriter:
    sql = FORMAT_SQL[name](selection, options.observations)
    return lambda split, folder: write_split(store, sql, split, folder, options)


def llamafactory_writer(
    store: Store, name: FormatName, selection: str, options: ExportOptions, settings: dict
) -> SplitWriter:
    if options.tool_calls == "native":  # function_call / observation turns; a sample per trained turn
        skipped: Counter = settings.setdefault("skipped", Counter())
        settings.update(mode="last", native=True)
        return lambda split, folder: write_stream(
            native_samples(store, selection, split, skipped), split, folder, options, NATIVE_LF_SCHEMA
        )
    settings["mode"] = llamafactory_mode(store, selection)
    sql = llamafactory_sql(selection, settings["mode"])
    return lambda split, folder: write_split(store, sql, split, folder, options)


def trl_writer(store: Store, name: FormatName, selection: str, options: ExportOptions, settings: dict) -> SplitWriter:
    tokenizer = load_export_tokenizer(options.tokenizer)
    skipped: Counter = settings.setdefault("skipped", Counter())
    settings.update(tokenizer=options.tokenizer, max_length=options.max_length)
    return lambda split, folder: write_trl_split(
        rendered_rows(store, selection, split, tokenizer, options, skipped), split, folder, options
    )


def openai_writer(
    store: Store, name: FormatName, selection: str, options: ExportOptions, settings: dict
) -> SplitWriter:
    skipped: Counter = settings.setdefault("skipped", Counter())
    as_text = options.file_type == "parquet"  # one Arrow column cannot hold every row's function schemas
    settings["tools_as_text"] = as_text
    return lambda split, folder: write_stream(
        native_rows(store, selection, split, as_text, skipped, options.observations),
        split,
        folder,
        options,
        NATIVE_SCHEMA,
    )


def finish_format(
    name: FormatName, staging: Path, files: dict[str, list[Path]], settings: dict[str, Any], options: ExportOptions
) -> None:
    """What a trainer reads beside the shards: LLaMA-Factory's dataset_info.json (AFM's fork reads the same
    file), and the longest sample, so the config's cutoff_len can hold every sample whole."""
    settings["splits"] = list(files)
    if name == "ranking" and files:  # LLaMA-Factory's pairwise entries: `ranking: true`
        from .preference_consumers import write_ranking_info

        settings["datasets"] = write_ranking_info(staging, files)
    if name not in ("llamafactory", "afm") or not files:
        return
    formatting = "sharegpt" if name == "llamafactory" else "alpaca"
    settings["datasets"] = write_dataset_info(staging, files, formatting, native=bool(settings.get("native")))
    staged = [staging / path.name for paths in files.values() for path in paths]
    tokenizer = load_export_tokenizer(options.tokenizer) if options.tokenizer else None
    settings.update(measure(staged, name, options.file_type, tokenizer), tokenizer_name=options.tokenizer)


def skipped_note(name: FormatName, settings: dict[str, Any]) -> str | None:
    skipped = settings.get("skipped")
    if not skipped:
        return None
    reasons = "; ".join(f"{count} {reason}" for reason, count in skipped.most_common())
    return f"{name}: {sum(skipped.values())} row(s) left out ({reasons})"
