"""The pipe between the runner (trusted, holds the result file) and the worker (runs
the generated code): one JSON object per message, behind a 4-byte length.

The worker's side is the code's to abuse, so the runner reads with a size cap, a
parse that cannot recurse past Python's stack, and a check that nothing arrived
before it asked (`pending`)."""

from __future__ import annotations

import json
import os
import select
import struct

HEADER = struct.Struct(">I")
DUMPS = json.dumps  # bound at import: the worker's code may rebind json's functions later


class ChannelError(Exception):
    """The other side wrote something that is not a message of this protocol."""


def send(fd: int, message: dict) -> None:
    data = DUMPS(message).encode("utf-8")
    view = memoryview(HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def read_exactly(fd: int, size: int) -> bytes | None:
    """`size` bytes, or None at end of file before the first byte."""
    chunks, got = [], 0
    while got < size:
        chunk = os.read(fd, min(size - got, 1 << 20))
        if not chunk:
            if got:
                raise ChannelError("a message cut short")
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def receive(fd: int, max_bytes: int) -> dict | None:
    """The next message, or None when the writer is gone. Raises ChannelError for
    anything else: too long, not JSON, nested past the parser, not an object."""
    header = read_exactly(fd, HEADER.size)
    if header is None:
        return None
    (size,) = HEADER.unpack(header)
    if size > max_bytes:
        raise ChannelError(f"a message of {size} bytes, over the {max_bytes} allowed")
    body = read_exactly(fd, size) or b""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ChannelError(f"a message that is not JSON ({type(exc).__name__})") from None
    if not isinstance(message, dict):
        raise ChannelError("a message that is not a JSON object")
    return message


def pending(fd: int) -> bool:
    """Whether the other side wrote (or closed) without being asked."""
    return bool(select.select([fd], [], [], 0)[0])
