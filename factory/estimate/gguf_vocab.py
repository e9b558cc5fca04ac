"""The tokenizer a GGUF file carries (its vocabulary, merges, special tokens and chat template), read from the
file's header alone.

The `gguf` package's reader maps every tensor too (6 s for SmolLM2-135M on 2 cores); the header holds all a
token count needs and parses in a fraction of that.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

WANTED = ("tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type",
          "tokenizer.chat_template", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id")  # fmt: skip
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9
CONTROL = 3  # token_type of a special token (<|im_start|>, ...)


@dataclass
class GGUFTokenizer:
    kind: str  # "gpt2" (byte-level BPE), "llama" (sentencepiece), ...
    tokens: list[str]
    merges: list[str]
    special: list[str] = field(default_factory=list)
    chat_template: str | None = None
    bos: str = ""
    eos: str = ""


def read_gguf_tokenizer(path: str | Path) -> GGUFTokenizer:
    """The tokenizer in a GGUF file's header; ValueError when the file is not GGUF."""
    with open(path, "rb") as file:
        if file.read(4) != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file")
        _version, _tensors, pairs = struct.unpack("<IQQ", file.read(20))
        values: dict[str, Any] = {}
        for _ in range(pairs):
            key = _string(file)
            value = _value(file, struct.unpack("<I", file.read(4))[0])
            if key in WANTED:
                values[key] = value
    tokens = values.get("tokenizer.ggml.tokens") or []
    types = values.get("tokenizer.ggml.token_type") or []

    def token(key: str) -> str:
        index = values.get(key)
        return tokens[index] if isinstance(index, int) and 0 <= index < len(tokens) else ""

    return GGUFTokenizer(
        kind=values.get("tokenizer.ggml.model", ""),
        tokens=tokens,
        merges=values.get("tokenizer.ggml.merges") or [],
        special=[t for t, kind in zip(tokens, types) if kind == CONTROL],
        chat_template=values.get("tokenizer.chat_template"),
        bos=token("tokenizer.ggml.bos_token_id"),
        eos=token("tokenizer.ggml.eos_token_id"),
    )


def _string(file: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", file.read(8))
    return file.read(length).decode("utf-8", errors="replace")


def _value(file: BinaryIO, kind: int) -> Any:
    if kind == STRING:
        return _string(file)
    if kind == ARRAY:
        item_kind, count = struct.unpack("<IQ", file.read(12))
        if item_kind in SCALARS:  # read in one go: token_type has one int per token
            fmt = SCALARS[item_kind]
            return list(struct.unpack(f"<{count}{fmt[1]}", file.read(count * struct.calcsize(fmt))))
        return [_value(file, item_kind) for _ in range(count)]
    fmt = SCALARS.get(kind)
    if fmt is None:
        raise ValueError(f"unknown GGUF value type {kind}")
    return struct.unpack(fmt, file.read(struct.calcsize(fmt)))[0]
