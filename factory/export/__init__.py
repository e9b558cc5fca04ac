"""Export and publish: a run's kept trajectories as datasets (sharegpt, messages, AFM) with a dataset card.

    export_dataset(run_dir, out, ExportOptions(...)) -> ExportResult
    publish(run_dir, repo_id=None, to=None, private=False, formats=None, token=None) -> PublishResult

The row contract of each format is in docs/export.md; train/ renders the same rows.
"""

from ..lazy_exports import lazy_exports

# The public API, imported on first use (factory/lazy_exports.py says why).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".dataset": ("ExportResult", "FormatFiles", "export_dataset"),
        ".options": ("FORMATS", "ExportError", "ExportOptions", "export_options"),
        ".publish": ("PublishResult", "publish"),
    },
)

__all__ = ["FORMATS", "ExportError", "ExportOptions", "ExportResult", "FormatFiles", "PublishResult",
           "export_dataset", "export_options", "publish"]  # fmt: skip
