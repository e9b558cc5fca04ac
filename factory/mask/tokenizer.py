"""The tokenizer a mask is rendered with, by name: `tiny` (the offline test tokenizer), a local folder, or a Hub name.

A Hub name is looked up only when the Hub can answer: offline, one line at once instead of a minute of
retries (transformers retries each file it cannot fetch before it gives up). The trl export and train/
load their tokenizers here, so both render with the same one for the same name.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from ..errors import FactoryError

TINY_PREFIX = "tiny:"
CONNECT_TIMEOUT_S = 3.0


def tokenizer_by_name(name: str, field: str):
    """`tiny` (or a tiny: model path) is the offline test tokenizer; anything else goes to AutoTokenizer."""
    if name.startswith(TINY_PREFIX) or name == "tiny":
        from .tiny import tiny_tokenizer

        return tiny_tokenizer()
    from transformers import AutoTokenizer

    check_reachable(name, field)
    try:
        return AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as exc:
        raise FactoryError(f"{field}: cannot load '{name}' ({first_line(exc)})") from None


def first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


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
