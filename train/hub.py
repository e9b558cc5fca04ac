"""A Hub name is looked up only when the Hub can answer: offline, one line at once instead of a minute of
retries (transformers retries each file it cannot fetch before it gives up)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from factory.errors import FactoryError

CONNECT_TIMEOUT_S = 3.0


def check_reachable(name: str, field: str) -> None:
    """Nothing when `name` is a local folder, is in the Hugging Face cache, or the Hub answers; else one line."""
    if Path(name).exists() or _cached(name):
        return
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes")
    if offline or not _hub_answers():
        why = "HF_HUB_OFFLINE is set" if offline else "the Hub cannot be reached"
        raise FactoryError(
            f"{field}: '{name}' is not a local folder nor in the Hugging Face cache, and {why}: download it "
            "where there is network (huggingface-cli download NAME --local-dir DIR) and give the folder"
        )


def _cached(name: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(name, "config.json"), str) or isinstance(
            try_to_load_from_cache(name, "tokenizer_config.json"), str
        )
    except Exception:  # an id the cache cannot even parse: let transformers say what is wrong with it
        return True


def _hub_answers() -> bool:
    endpoint = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        with socket.create_connection((endpoint.hostname, port), timeout=CONNECT_TIMEOUT_S):
            return True
    except OSError:
        return False
