"""`write_report`: read a run store (never writing to it), aggregate in DuckDB, write one self-contained HTML file."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import FactoryError
from ..export.options import ExportOptions
from ..export.selection import kept_counts
from ..failures import failure_sections
from ..funnels import path_funnels
from ..refine.quality import refine_quality
from ..refine.quality_rows import row_quality
from ..store import STORE_FILENAME, Store
from ..version import __version__
from . import (
    data_calls,
    data_paths,
    data_samples,
    sections_calls,
    sections_data,
    sections_eval,
    sections_failures,
    sections_quality,
    sections_samples,
)
from .coa_quality import coa_quality
from .page import document

REPORT_FILENAME = "report.html"
NAV = (
    ("overview", "Overview"),
    ("funnel", "Funnels & filters"),
    ("failures", "Failures"),
    ("samples", "Samples"),
    ("shape", "Turns & tool calls"),
    ("errors", "Errors"),
    ("quality", "Quality"),
    ("pass-rate", "Pass rates"),
    ("eval", "Held-out evaluation"),
    ("usage", "Tokens & cost"),
    ("latency", "Latency"),
)


def collect_report(store: Store, options: ExportOptions | None = None, seed: str = data_samples.SEED) -> dict[str, Any]:
    """Every number the report shows, as plain data (all aggregation happens in SQL); `options`: the export's."""
    options = options or ExportOptions()
    return {
        "options": options, "kept": kept_counts(store, options), "samples": data_samples.samples(store, options, seed),
        "header": data_paths.header(store), "funnels": path_funnels(store),
        "filters": data_paths.filters(store), "shape": data_paths.shape(store),
        "errors": data_paths.errors(store), "pass_rates": data_paths.pass_rates(store),
        "calls": data_calls.totals(store), "usage": data_calls.usage(store), "latency": data_calls.latency(store),
        "error_kinds": data_calls.error_kinds(store), "quality": refine_quality(store),
        "coa_quality": coa_quality(store), "refine_rows": row_quality(store),
        "failures": failure_sections(store),
    }  # fmt: skip


def render_report(data: dict[str, Any], run_dir: Path) -> str:
    runs = data["header"]["runs"]
    subtitle = f"{run_dir} · {len(runs)} run(s): " + (", ".join(r["run_id"] for r in runs[-3:]) or "none")
    body = [
        sections_data.overview(data["header"], data["calls"], data["kept"]),
        sections_data.funnels(data["funnels"], data["filters"], data["kept"], data["options"]),
        sections_failures.failures(data["failures"]),
        sections_samples.samples(data["samples"]),
        sections_data.shape(data["shape"]),
        sections_data.errors(data["errors"]),
        sections_quality.quality(data["quality"], data.get("coa_quality"), data.get("refine_rows")),
        sections_data.pass_rates(data["pass_rates"]),
        sections_eval.held_out(data.get("evals", [])),
        sections_calls.usage(data["usage"]),
        sections_calls.latency(data["latency"], data["error_kinds"], data["calls"]["calls"]),
    ]
    made = f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}"
    footer = f"factory {__version__} · report made {made} from {run_dir / STORE_FILENAME}"
    return document(f"factory run report — {run_dir.name}", subtitle, NAV, body, footer)


def write_report(run_dir: str | Path, out: str | Path | None = None, options: ExportOptions | None = None,
                 seed: str = data_samples.SEED) -> Path:  # fmt: skip
    """Write the run's HTML report (default RUN_DIR/report.html) and return its path.

    `options`: the export's (splits and upsampling), so the report counts what that export writes;
    `seed` picks the sample trajectories shown."""
    run_dir = Path(run_dir)
    with Store.open(run_dir, read_only=True) as store, store.snapshot():  # one view of a store a run may be writing
        data = {**collect_report(store, options, seed), "evals": sections_eval.evaluations(run_dir)}
        html = render_report(data, run_dir)
    target = Path(out) if out is not None else run_dir / REPORT_FILENAME
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise FactoryError(f"cannot write report to {target}: {exc.strerror}") from None
    return target
