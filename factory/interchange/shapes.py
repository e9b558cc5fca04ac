"""What an interchange reader returns, and the one error it raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import FactoryError
from ..records import Turn


class InterchangeError(FactoryError):
    """A file that is not the format it claims, in one line naming the place."""


@dataclass
class Imported:
    id: str
    turns: list[Turn]  # native turns: assistant tool_calls, tool turns with tool_call_id
    tools: list[dict[str, Any]]  # OpenAI function schemas
    source: str | None = None  # the row's source when the file was written by factory (refine, coa, import)


def text_of(message: Any, where: str) -> str:
    """A message as text: a string, or text parts joined (an image part cannot be held: refused)."""
    if isinstance(message, str):
        return message
    if isinstance(message, list):
        texts = [p.get("text") for p in message if isinstance(p, dict) and p.get("type") == "text"]
        if len(texts) == len(message) and all(isinstance(t, str) for t in texts):
            return "".join(texts)
        raise InterchangeError(f"{where}: only text parts can be imported (an image or audio part is here)")
    raise InterchangeError(f"{where}: a message is text or a list of text parts, not {type(message).__name__}")
