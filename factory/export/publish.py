"""Publish a run as a Hub dataset: a local folder in the Hub's layout, or one commit to a Hub repo.

The layout is README.md (the card, whose `configs` name the files) plus
data/<format>/<split>-<digest>-NNNNN-of-NNNNN.parquet (the digest: see
dataset.fingerprint_shards). Pushing writes that folder to a
temporary directory and sends it with huggingface_hub: create the repo, then
one commit that adds every file and deletes the repo's data files this export
no longer has (so a re-publish never mixes old shards into a config's glob).
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..config import validate_config
from .dataset import ExportResult, Layout, export_dataset
from .options import ExportError, ExportOptions
from .verl import RLOptions

REPO_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
DATA_DIR = "data"


def hub_layout(repo_id: str | None = None) -> Layout:
    """The Hub's layout: data/<format>/ with content-digest shard names; the card loads from the repo when pushed."""
    return Layout(data_dir=DATA_DIR, fingerprint=True, load_path=repo_id)


@dataclass
class PublishResult:
    export: ExportResult
    folder: Path | None  # the local Hub folder (None after a push: it was temporary)
    repo_url: str | None = None
    commit_url: str | None = None


def publish(run_dir: str | Path, repo_id: str | None = None, to: str | Path | None = None, private: bool = False,
            formats: list[str] | None = None, token: str | None = None, options: ExportOptions | None = None,
            endpoint: str | None = None, rl: RLOptions | None = None) -> PublishResult:  # fmt: skip
    """Write the Hub layout to `to`, or push it to the dataset repo `repo_id` (token: argument or HF_TOKEN)."""
    if (repo_id is None) == (to is None):
        raise ExportError("publish needs exactly one target: a Hub repo id (ORG/NAME) or a local folder (--to DIR)")
    # The Hub layout is always Parquet, the format its dataset viewer reads.
    chosen = {**(options or ExportOptions()).model_dump(), "file_type": "parquet"}
    if formats:
        chosen["formats"] = list(formats)
    options = validate_config(ExportOptions, chosen, "publish options")
    if to is not None:
        result = export_dataset(run_dir, to, options, rl=rl, layout=hub_layout())
        return PublishResult(result, Path(to))
    if not REPO_ID.match(repo_id):
        raise ExportError(f"repo id {repo_id!r} is not of the form ORG/NAME")
    token = token or hub_token()
    with tempfile.TemporaryDirectory(prefix="factory-publish-") as folder:
        result = export_dataset(run_dir, folder, options, rl=rl, layout=hub_layout(repo_id))
        repo_url, commit_url = push_folder(Path(folder), repo_id, private, token, endpoint)
    return PublishResult(result, None, repo_url, commit_url)


def hub_token() -> str:
    from huggingface_hub import get_token

    token = os.environ.get("HF_TOKEN") or get_token()
    if not token:
        raise ExportError("pushing to the Hub needs a token: set HF_TOKEN (a write token from hf.co/settings/tokens)")
    return token


def push_folder(folder: Path, repo_id: str, private: bool, token: str, endpoint: str | None) -> tuple[str, str]:
    """create_repo, then one commit of every file under `folder`; Hub errors become one line."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi(endpoint=endpoint, token=token)
    files = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())
    try:
        repo = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        stale = [
            path
            for path in api.list_repo_files(repo_id, repo_type="dataset")
            if path.startswith(f"{DATA_DIR}/") and path not in files
        ]
        operations = [CommitOperationAdd(path_in_repo=path, path_or_fileobj=str(folder / path)) for path in files]
        operations += [CommitOperationDelete(path_in_repo=path) for path in stale]
        commit = api.create_commit(repo_id, operations, commit_message="Publish factory dataset", repo_type="dataset")
    except (HfHubHTTPError, OSError, ValueError, *transport_errors()) as exc:  # ValueError: the Hub refused the card
        raise ExportError(f"push to {repo_id} failed: {first_line(exc)}") from None
    return str(repo), commit.commit_url


def transport_errors() -> tuple[type[BaseException], ...]:
    """huggingface_hub 1.x talks through httpx, whose errors are not OSErrors (requests' are)."""
    try:
        import httpx
    except ImportError:
        return ()
    return (httpx.HTTPError,)


def first_line(exc: BaseException) -> str:
    """The error on one line (the Hub's card errors come as a list of lines)."""
    text = " ".join(str(exc).split())
    return (text[:300] + "...") if len(text) > 300 else text or type(exc).__name__
