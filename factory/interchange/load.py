"""`factory import FILE`: ATIF or ADP trajectories into a run store, then the same filters and exports.

A file is JSON lines (one trajectory a line), or one JSON document holding a trajectory or a list of them.
Each is told apart by its keys (ATIF: `schema_version` "ATIF-v…"; ADP: a `content` list) unless `fmt` says.
A trajectory is stored as a verified `import` row in the native form: its turns carry their tool calls and
training flags, its `tools` column the functions offered (export/native.py reads them back). A trajectory
that does not read is a failed row naming the line and the field; the others still import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Literal

from ..records import Trajectory
from ..run import open_run
from ..store.trajectories import write_trajectory
from .adp import from_adp
from .atif import from_atif
from .shapes import Imported, InterchangeError

Format = Literal["auto", "atif", "adp"]


@dataclass
class ImportOutcome:
    imported: int = 0
    failed: list[str] = field(default_factory=list)  # "FILE:LINE: why"


def documents(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, document) for every trajectory of the file; an unreadable line is (where, the error)."""
    text = path.read_text(encoding="utf-8")
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if whole is not None:
        for index, doc in enumerate(whole if isinstance(whole, list) else [whole]):
            yield f"{path.name}[{index}]", doc
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                yield f"{path.name}:{number}", json.loads(line)
            except ValueError as exc:
                yield f"{path.name}:{number}", InterchangeError(f"not JSON ({exc})")


def read(doc: Any, fmt: Format) -> Imported:
    if isinstance(doc, InterchangeError):
        raise doc
    kind = fmt if fmt != "auto" else "atif" if isinstance(doc, dict) and "steps" in doc else "adp"
    return from_atif(doc) if kind == "atif" else from_adp(doc)


def import_file(path: str | Path, run_dir: str | Path, fmt: Format = "auto") -> ImportOutcome:
    path, outcome = Path(path), ImportOutcome()
    if not path.is_file():
        raise InterchangeError(f"{path}: no such file")
    with open_run(run_dir, "import") as run:
        for where, doc in documents(path):
            try:
                imported = read(doc, fmt)
            except InterchangeError as exc:
                outcome.failed.append(f"{where}: {exc}")
                row = {"trajectory_id": f"import:{where}", "source": "import", "verified": False,
                       "reason": f"import: {exc}"}  # fmt: skip
                write_trajectory(run.store, row)
                continue
            trajectory = Trajectory(id=imported.id, source="import", turns=imported.turns,
                                    provenance={"imported_from": where, "source": imported.source})  # fmt: skip
            row = {"trajectory_id": imported.id, "source": "import", "verified": True, "reason": None,
                   "tools": json.dumps(imported.tools, ensure_ascii=False)}  # fmt: skip
            stats = trajectory.stats().model_copy(update={"provenance": trajectory.provenance})
            write_trajectory(run.store, row, trajectory, stats)
            outcome.imported += 1
    return outcome
