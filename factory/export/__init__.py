"""Export and publish: a run's kept trajectories as datasets (sharegpt, messages, AFM) with a dataset card.

    export_dataset(run_dir, out, ExportOptions(...)) -> ExportResult
    publish(run_dir, repo_id=None, to=None, private=False, formats=None, token=None) -> PublishResult

The row contract of each format is in docs/export.md; train/ renders the same rows.
"""

from .dataset import ExportResult, FormatFiles, export_dataset
from .options import FORMATS, ExportError, ExportOptions, export_options
from .publish import PublishResult, publish

__all__ = ["FORMATS", "ExportError", "ExportOptions", "ExportResult", "FormatFiles", "PublishResult",
           "export_dataset", "export_options", "publish"]  # fmt: skip
