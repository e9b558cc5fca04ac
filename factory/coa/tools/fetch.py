"""Bounded HTTP for the tools: capped bodies, one-line errors, and a guard that
keeps agent-chosen URLs away from this machine and its private network."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

CHUNK_BYTES = 65_536
# What a fetch may raise besides an HTTP status: refused connections, DNS
# failures, timeouts, malformed URLs (aiohttp raises ValueError for some).
TRANSPORT_ERRORS = (aiohttp.ClientError, TimeoutError, OSError, ValueError, UnicodeError)


@dataclass(frozen=True)
class Fetched:
    status: int
    reason: str
    url: str
    content_type: str  # lower case, no parameters: "text/html"; "" when the server did not say
    charset: str | None
    body: bytes
    truncated: bool  # the body stopped at the byte cap
    location: str | None  # the Location header of a redirect
    retry_after: str | None  # the Retry-After header of a 429 or 503


async def read_capped(response: aiohttp.ClientResponse, max_bytes: int) -> tuple[bytes, bool]:
    """At most `max_bytes` of the (decompressed) body; True when there was more."""
    chunks, size = [], 0
    async for chunk in response.content.iter_chunked(CHUNK_BYTES):
        if size + len(chunk) > max_bytes:
            chunks.append(chunk[: max_bytes - size])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


async def fetch(session: aiohttp.ClientSession, method: str, url: str, max_bytes: int, **request) -> Fetched:
    """One request, no redirects followed; raises one of TRANSPORT_ERRORS."""
    async with session.request(method, url, allow_redirects=False, **request) as response:
        body, truncated = await read_capped(response, max_bytes)
        return Fetched(
            status=response.status, reason=response.reason or "", url=str(response.url),
            content_type=response.content_type.lower() if "Content-Type" in response.headers else "",
            charset=response.charset, body=body, truncated=truncated,
            location=response.headers.get("Location"), retry_after=response.headers.get("Retry-After"),
        )  # fmt: skip


def describe_error(exc: BaseException, timeout_s: float) -> str:
    """One line for the agent: what went wrong with the request."""
    if isinstance(exc, TimeoutError):  # aiohttp's timeouts are TimeoutErrors too
        return f"timed out after {timeout_s:g} s"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"cannot connect to {exc.host}:{exc.port} ({exc.os_error.strerror or exc.os_error})"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text


def is_public_address(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_global
    except ValueError:
        return False


def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        return False
    return True


class PublicOnlyResolver(AbstractResolver):
    """Resolves names as usual but drops loopback, private, link-local and reserved
    addresses, so a name pointing at 127.0.0.1 or 169.254.169.254 cannot be reached.
    (aiohttp does not resolve IP literals: the crawl tool checks those itself.)"""

    def __init__(self) -> None:
        self.inner = aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        public = [info for info in await self.inner.resolve(host, port, family) if is_public_address(info["host"])]
        if not public:
            raise OSError(f"{host} resolves to a private or local address, which crawl_page may not fetch")
        return public

    async def close(self) -> None:
        await self.inner.close()


def session(timeout_s: float, public_only: bool, headers: dict[str, str] | None = None) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(resolver=PublicOnlyResolver()) if public_only else aiohttp.TCPConnector()
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    return aiohttp.ClientSession(timeout=timeout, connector=connector, headers=headers, trust_env=False)


async def sleep_before_retry(attempt: int, base_s: float, max_s: float, retry_after: str | None) -> None:
    delay = min(max_s, base_s * 2**attempt)
    if retry_after and retry_after.strip().isdigit():
        delay = min(max_s, float(retry_after))
    await asyncio.sleep(delay)
