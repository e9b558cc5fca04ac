"""The pipe between the runner (trusted, holds the result file) and the worker (runs
the generated code): one JSON object per message, behind a 4-byte length.

The worker's side is the code's to abuse, so the runner reads with a size cap, a
parse that cannot recurse past Python's stack, and a check that nothing arrived
before it asked (`pending`)."""

from __future__ import annotations

import json
import os
import re
import select
import struct

HEADER = struct.Struct(">I")
DUMPS = json.dumps  # bound at import: the worker's code may rebind json's functions later
JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # linear: no backtracking to speak of


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


def nests(body: bytes) -> bool:
    """Whether a JSON text is more than one object of scalars: strings blanked out, a
    second brace or any bracket is a nested value."""
    skeleton = JSON_STRING.sub(b'""', body)
    return skeleton.count(b"{") > 1 or b"[" in skeleton


def receive(fd: int, max_bytes: int, flat: bool = False) -> dict | None:
    """The next message, or None when the writer is gone. Raises ChannelError for
    anything else: too long, not JSON, nested past the parser, not an object, or (with
    `flat`) an object with a list or an object inside: the runner's replies are flat, and
    1 MB of `[{}, {}, ...]` would be some 24 MiB of objects in a runner with no memory limit."""
    header = read_exactly(fd, HEADER.size)
    if header is None:
        return None
    (size,) = HEADER.unpack(header)
    if size > max_bytes:
        raise ChannelError(f"a message of {size} bytes, over the {max_bytes} allowed")
    body = read_exactly(fd, size) or b""
    if flat and nests(body):
        raise ChannelError("a message that nests values where the protocol has none")
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
