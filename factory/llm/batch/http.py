"""The batch APIs' HTTP calls: one pooled aiohttp session, errors classified like chat calls."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from ..transport import TransportError, classify_reply

OK_STATUSES = (200, 201)


class BatchHTTP:
    def __init__(self, headers: dict[str, str], timeout_s: float):
        self.headers = headers
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self.timeout, headers=self.headers)
        return self._session

    async def call(self, method: str, url: str, **kwargs: Any) -> bytes:
        """The reply's body; TransportError (kind auth, rate_limit, server, ...) for any failure."""
        try:
            async with self._get_session().request(method, url, **kwargs) as resp:
                payload = await resp.read()
                if (
                    resp.status == 404
                ):  # OpenAI labels a missing batch or file invalid_request_error: the status says it
                    raise TransportError("not_found", f"HTTP 404 {method} {url}: {payload[:200]!r}", 404)
                if resp.status not in OK_STATUSES:
                    raise classify_reply(resp.status, payload, resp.headers)
                return payload
        except asyncio.TimeoutError:
            raise TransportError(
                "timeout", f"{method} {url}: no complete reply within {self.timeout.total:g}s"
            ) from None
        except aiohttp.ClientPayloadError as exc:
            raise TransportError("bad_response", f"{method} {url}: reply cut off: {exc}") from None
        except aiohttp.ClientError as exc:
            raise TransportError("connection", f"{method} {url}: {type(exc).__name__}: {exc}") from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
