"""Counting a request's prompt tokens offline: the model's own tokenizer where one is on this machine, else a
characters-per-token ratio (calibrated from the run store's call log when it has calls of this model).

Nothing is downloaded. The embedded model's tokenizer is read from its GGUF file (gguf_vocab.py) and its chat
template applied; OpenAI models use tiktoken with the encoding files litellm ships (tiktoken alone would fetch
them). Every counter says which method it is, and the dry run prints it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

DEFAULT_CHARS_PER_TOKEN = 4.0  # OpenAI's rule of thumb for English text
PER_MESSAGE_TOKENS = 4  # the chat format's tokens around each message (role, separators), as OpenAI counts them
Messages = list[dict[str, Any]]


@dataclass
class TokenCounter:
    method: str  # what the dry run prints: "tokenizer ..." or "... chars/token ..."
    count_text: Callable[[str], int]
    count_chat: Callable[[Messages], int] | None = None  # the whole chat as the server renders it, when known

    def count(self, messages: Messages) -> int:
        if self.count_chat is not None:
            return self.count_chat(messages)
        return sum(self.count_text(message_text(m)) + PER_MESSAGE_TOKENS for m in messages) + 3

    def per_char(self, sample: str) -> float:
        """Tokens per character of `sample` (to price text not rendered yet, such as a run's history)."""
        return self.count_text(sample) / max(len(sample), 1)


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else orjson.dumps(content).decode()


def chars_of(messages: Messages) -> int:
    return sum(len(message_text(m)) for m in messages)


def ratio_counter(chars_per_token: float, where: str, calibrated: bool = False) -> TokenCounter:
    """Characters over a ratio. A calibrated ratio (the store's message characters over the prompt tokens the
    server reported) already holds the chat format's own tokens, so none are added to it."""

    def count_text(text: str) -> int:
        return round(len(text) / chars_per_token)

    chat = (lambda messages: round(chars_of(messages) / chars_per_token)) if calibrated else None
    return TokenCounter(f"{chars_per_token:.2f} chars/token ({where})", count_text, chat)


def pick_counter(model: str, calibration: tuple[float, int] | None = None) -> TokenCounter:
    """The best counter for `model`: its tokenizer, else the store's calibrated ratio, else the default ratio.
    `calibration`: (characters per token, calls it was measured on) from the run store's call log."""
    counter = gguf_counter(model) or tiktoken_counter(model)
    if counter is not None:
        return counter
    if calibration is not None:
        ratio, calls = calibration
        return ratio_counter(ratio, f"calibrated on {calls} logged calls of this model", calibrated=True)
    return ratio_counter(DEFAULT_CHARS_PER_TOKEN, "default ratio; no tokenizer for this model offline")


def gguf_counter(model: str) -> TokenCounter | None:
    """The embedded model's (or a local:/path.gguf's) byte-level BPE tokenizer and chat template."""
    if model != "local" and not model.startswith("local:"):
        return None
    try:
        path = _gguf_path(model)
        tokenizer, template, name = _gguf_tokenizer(str(path))
    except Exception:  # no file, or a tokenizer kind not read here (sentencepiece): the ratio will do
        return None
    if tokenizer is None:
        return None

    def count_text(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    def count_chat(messages: Messages) -> int:
        if template is None:
            return sum(count_text(message_text(m)) + PER_MESSAGE_TOKENS for m in messages)
        return count_text(template(messages))

    return TokenCounter(f"tokenizer of {name} (read from its GGUF file)", count_text, count_chat)


def _gguf_path(model: str) -> Path:
    if model.startswith("local:"):
        return Path(model.split(":", 1)[1]).expanduser()
    from ..llm.local import default_gguf

    return default_gguf()


@lru_cache(maxsize=4)
def _gguf_tokenizer(path: str):
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    from .gguf_vocab import read_gguf_tokenizer

    vocab = read_gguf_tokenizer(path)
    if vocab.kind != "gpt2":
        return None, None, Path(path).name
    merges = [tuple(m.split(" ", 1)) for m in vocab.merges]
    tokenizer = Tokenizer(models.BPE({t: i for i, t in enumerate(vocab.tokens)}, merges))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tokenizer.add_special_tokens([AddedToken(t, special=True) for t in vocab.special])
    return tokenizer, _chat_template(vocab.chat_template, vocab.bos, vocab.eos), Path(path).name


def _chat_template(source: str | None, bos: str, eos: str) -> Callable[[Messages], str] | None:
    if not source:
        return None
    import jinja2

    template = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(source)
    return lambda messages: template.render(messages=messages, add_generation_prompt=True, bos_token=bos, eos_token=eos)


def tiktoken_counter(model: str) -> TokenCounter | None:
    """OpenAI models, by the encoding tiktoken maps their name to, from litellm's bundled encoding files."""
    encoding = _tiktoken_encoding(model.split("/", 1)[-1])
    if encoding is None:
        return None
    return TokenCounter(
        f"tokenizer {encoding.name} (tiktoken)", lambda text: len(encoding.encode(text, disallowed_special=()))
    )


@lru_cache(maxsize=8)
def _tiktoken_encoding(name: str):
    try:
        import tiktoken

        encoding_name = tiktoken.encoding_name_for_model(name)
    except (ImportError, KeyError):
        return None
    with _litellm_encoding_files():
        try:
            return tiktoken.get_encoding(encoding_name)
        except Exception:  # not bundled and no network: the ratio will do
            return None


@contextlib.contextmanager
def _litellm_encoding_files():
    """tiktoken's cache pointed at the encoding files litellm ships, for this load only."""
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    folder = Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" / "tokenizers" if spec else None
    if folder is None or not folder.is_dir() or "TIKTOKEN_CACHE_DIR" in os.environ:
        yield
        return
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        yield
    finally:
        os.environ.pop("TIKTOKEN_CACHE_DIR", None)
