"""`export_dataset`: a run's kept trajectories as dataset files in every asked format, plus the card."""

from __future__ import annotations

import hashlib
import shutil
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..paths import make_folder
from ..store import Store
from .card import write_card
from .consumers import finish_format, skipped_note, split_writer, unavailable
from .observations import untrained_note
from .options import ExportError, ExportOptions, FormatName
from .registry import format_spec
from .selection import groups_in_several_splits, open_store, selection_sql, split_counts, unconfirmed_answers
from .verl import RLFiles, RLOptions, clear_rl, write_rl
from .writers import fresh_folder, replace_folder


@dataclass
class FormatFiles:
    name: FormatName
    folder: Path  # relative to the output folder, e.g. data/sharegpt
    files: dict[str, list[Path]]  # split -> shard paths, relative to the output folder
    rows: dict[str, int]  # split -> rows written
    settings: dict[str, Any] = field(
        default_factory=dict
    )  # what the trainer's config must say (e.g. llamafactory mode)
    fingerprint: str = ""  # in the shard names of a published layout (see fingerprint_shards)


@dataclass(frozen=True)
class Layout:
    """Where an export puts its files. The default is a plain folder (`out/<format>/`); publishing asks for the
    Hub's (publish.hub_layout): `out/data/<format>/`, shard names carrying a content digest, and a card that
    tells `load_dataset` the repo id instead of the folder."""

    data_dir: str = ""
    fingerprint: bool = False  # see fingerprint_shards
    load_path: str | None = None  # what the card loads from; None: the output folder


@dataclass
class ExportResult:
    run_dir: Path
    out: Path
    options: ExportOptions
    selected: dict[str, int]  # SFT split -> kept rows (after upsampling), before a format leaves rows out
    formats: list[FormatFiles] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    card: Path | None = None
    rl: RLFiles | None = None  # the RL split as verl rows (factory/export/verl.py); None: no RL split


def export_dataset(run_dir: str | Path, out: str | Path, options: ExportOptions | None = None,
                   rl: RLOptions | None = None, layout: Layout = Layout()) -> ExportResult:  # fmt: skip
    """Write out/<format>/<split>-NNNNN-of-NNNNN.<ext> for each format (under the layout's data_dir), and
    out/README.md.

    The RL split (rl.split, default "rl") is not an SFT split: its queries go to out/verl/ as verl rows.
    """
    options, rl = options or ExportOptions(), rl or RLOptions()
    data_dir = layout.data_dir
    result = ExportResult(Path(run_dir), Path(out), options, {})
    with closing(open_store(run_dir)) as store:
        make_folder(result.out, "export folder")  # after the run opened: a mistyped run leaves no folder behind
        result.selected = split_counts(store, options)
        leaks = groups_in_several_splits(store, options)
        if leaks:
            result.warnings.append(f"{leaks} task group(s) appear in more than one curation split")
        unconfirmed = unconfirmed_answers(store, options)
        if unconfirmed:
            result.warnings.append(unconfirmed)
        # --- RL hand-off: the RL split leaves the SFT formats and is written as verl rows ---
        if result.selected.pop(rl.split, None) is not None:
            result.rl = write_rl(store, options, rl, result.out, data_dir)
            result.warnings += [f"{rl.split}: {note}" for note in result.rl.notes]
        else:
            clear_rl(result.out, data_dir)
        if not result.selected:  # every kept row was an RL query: no SFT formats, no card
            return result
        # --- end RL hand-off ---
        untrained = untrained_note(options.observations, list(options.formats))
        result.warnings += [untrained] if untrained else []
        for name in options.formats:
            reason = unavailable(name, options)
            if reason and len(options.formats) > 1:
                result.warnings.append(f"{name}: skipped, {reason}")
                shutil.rmtree(
                    result.out / data_dir / name, ignore_errors=True
                )  # an older export's rows would pass for these
                continue
            if reason:
                raise ExportError(reason)
            written = write_format(store, name, Path(data_dir) / name, result, layout.fingerprint)
            if written.rows:
                result.formats.append(written)
                note_left_out(written, result)
            elif len(options.formats) == 1:
                raise ExportError(f"{run_dir}: {format_spec(name).empty}")
            else:
                result.warnings.append(f"{name}: skipped, {format_spec(name).empty}")
        result.card = write_card(store, result, layout.load_path)
    return result


def write_format(
    store: Store, name: FormatName, folder: Path, result: ExportResult, fingerprint: bool = False
) -> FormatFiles:
    final = result.out / folder
    staging = fresh_folder(final.with_name(f".{final.name}.partial"))
    written = FormatFiles(name, folder, {}, {})
    write_rows = split_writer(store, name, selection_sql(result.options), result.options, written.settings)
    shards: dict[str, list[Path]] = {}
    for split in result.selected:
        rows, paths = write_rows(split, staging)
        if rows:
            written.rows[split], shards[split] = rows, paths
    if fingerprint and shards:
        written.fingerprint, shards = fingerprint_shards(shards)
    written.files = {split: [folder / path.name for path in paths] for split, paths in shards.items()}
    finish_format(name, staging, written.files, written.settings, result.options)
    replace_folder(staging, final, keep=bool(written.rows))
    note = skipped_note(name, written.settings)
    if note:
        result.warnings.append(note)
    return written


def note_left_out(written: FormatFiles, result: ExportResult) -> None:
    """Say how many kept rows a format could not hold (formats that count their own skips, and AFM, which
    exists only for coa/import, are not noted here)."""
    missing, why = sum(result.selected.values()) - sum(written.rows.values()), format_spec(written.name).left_out
    if missing > 0 and why:
        result.warnings.append(f"{written.name}: {missing} row(s) left out ({why})")


def fingerprint_shards(shards: dict[str, list[Path]]) -> tuple[str, dict[str, list[Path]]]:
    """Rename <split>-NNNNN-of-NNNNN.<ext> to <split>-<digest>-NNNNN-of-NNNNN.<ext>, the digest taken over
    the format's shard bytes. `datasets` caches a local folder by its name and its configs' file
    patterns, not by its content: two published folders named alike (`load_dataset("out/hub")` after
    another `hub`) would share a cache entry and the second would load the first one's rows. The card's
    patterns carry the digest, so different content is a different cache entry and equal content the same."""
    digest = hashlib.sha256()
    for path in sorted(path for paths in shards.values() for path in paths):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    tag = digest.hexdigest()[:12]
    renamed = {}
    for split, paths in shards.items():
        renamed[split] = [
            path.rename(path.with_name(path.name.replace(f"{split}-", f"{split}-{tag}-", 1))) for path in paths
        ]
    return tag, renamed
