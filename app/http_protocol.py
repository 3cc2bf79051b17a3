"""uvicorn's httptools protocol with the limits it lacks, for ``oddsboost serve``.

uvicorn bounds neither a request's header size nor the time a client takes to send it. Here
the request line and headers may hold at most ``header_limit_bytes`` (else 431), must arrive
within ``header_timeout_seconds`` of the request's first byte, and the body within
``body_timeout_seconds`` of the headers (else 408), not counting time the server itself
keeps the body waiting. Every refusal closes the connection and is a problem document, as
is uvicorn's own 400. The class extended is not uvicorn's public API: pyproject.toml pins
uvicorn to the minor version tests/test_http_protocol.py checks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, cast

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from app.api.middleware import error_body
from app.api.schemas.problems import PROBLEM_MEDIA_TYPE
from app.domain.wording import counted
from app.settings import get_settings

log = logging.getLogger("oddsboost.connections")

# What a header adds to its name and value: ": " and the line's end.
HEADER_SEPARATORS = 4
# Closing on unread bytes resets the connection, and the client could lose the answer.
LINGER_SECONDS = 2.0


class LimitedHttpProtocol(HttpToolsProtocol):
    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.settings = get_settings()
        self._deadline: asyncio.TimerHandle | None = None
        # No request under way, or the one under way has not sent all its headers yet.
        self._reading_headers = True
        self._request_started = False  # a byte of the next request has arrived
        self._headers_ended = False  # a request's headers ended in the bytes just read
        self._header_bytes = 0  # bytes read of the current request's headers
        self._header_size = 0  # its request line and headers, as parsed
        self._closed_here = False
        self.url = b""  # the request target, as parsed so far

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(cast(asyncio.Transport, transport))
        self._arm(self.settings.header_timeout_seconds, self._headers_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._closed_here:
            return
        if self._reading_headers:
            self._request_started = True
            if self._deadline is None:  # the next request on a kept-alive connection
                self._arm(self.settings.header_timeout_seconds, self._headers_too_slow)
        all_headers = self._reading_headers
        self._headers_ended = False
        super().data_received(data)
        if self._closed_here:
            return  # the bytes were not a request: refused
        if all_headers and self._reading_headers and not self._headers_ended:
            # Every byte just read belongs to headers that have not ended: count them before
            # the parser buffers any more of them.
            self._header_bytes += len(data)
            if self._header_bytes > self.settings.header_limit_bytes:
                self._refuse_large_headers()

    def send_400_response(self, _msg: str) -> None:
        # uvicorn has logged ``_msg``.
        self._close_with(
            400, "the request is not valid HTTP/1.1", answer=self._no_answer_under_way()
        )

    def handle_websocket_upgrade(self) -> None:
        self._disarm()
        super().handle_websocket_upgrade()

    def on_message_begin(self) -> None:
        if self._closed_here:
            return
        super().on_message_begin()
        self._header_size = 0
        if self._deadline is None:
            self._arm(self.settings.header_timeout_seconds, self._headers_too_slow)

    def on_url(self, url: bytes) -> None:
        if self._closed_here:
            return
        self._header_size += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._closed_here:
            return
        self._header_size += len(name) + len(value) + HEADER_SEPARATORS
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if self._closed_here:
            return
        self._disarm()
        self._reading_headers, self._headers_ended, self._header_bytes = False, True, 0
        # Headers that arrived in one read are measured here, once parsed.
        if self._header_size > self.settings.header_limit_bytes:
            self._refuse_large_headers()
            return
        self._arm(self.settings.body_timeout_seconds, self._body_too_slow)
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._closed_here:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._closed_here:
            return
        self._disarm()
        self._reading_headers, self._request_started, self._header_bytes = True, False, 0
        super().on_message_complete()

    def _refuse_large_headers(self) -> None:
        limit = self.settings.header_limit_bytes
        self._close_with(
            431,
            f"request headers too large: at most {counted(limit, 'byte')} with the request line",
            answer=self._no_answer_under_way(),
        )

    def _headers_too_slow(self) -> None:
        self._deadline = None
        if not self._request_started:
            log.debug("closed a connection from %s that sent nothing", self._client())
            self._close()
            return
        seconds = self.settings.header_timeout_seconds
        self._close_with(
            408,
            f"request headers not complete within {seconds:g} s",
            answer=self._no_answer_under_way(),
        )

    def _body_too_slow(self) -> None:
        self._deadline = None
        cycle = self.cycle
        if cycle.waiting_for_100_continue or self.flow.read_paused:
            # The server, not the client, is the one keeping the body waiting.
            self._arm(self.settings.body_timeout_seconds, self._body_too_slow)
            return
        answer = not cycle.response_started
        if answer:
            # The application's reads end here, and whatever it answers goes nowhere.
            cycle.disconnected = True
            cycle.message_event.set()
        seconds = self.settings.body_timeout_seconds
        self._close_with(408, f"request body not complete within {seconds:g} s", answer=answer)

    def _target(self) -> str:
        """The refused request's path, as far as it arrived."""
        return self.url.partition(b"?")[0].decode("latin-1")

    def _no_answer_under_way(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _close_with(self, status: int, detail: str, *, answer: bool) -> None:
        log.warning("%d %s: closed the connection from %s", status, detail, self._client())
        if answer and not self.transport.is_closing():
            body = error_body(status, detail, self._target())
            head = [STATUS_LINE[status]]
            for name, value in self.server_state.default_headers:
                head.append(name + b": " + value + b"\r\n")
            head.append(
                b"content-type: %s\r\ncontent-length: %d\r\n"
                b"connection: close\r\n\r\n" % (PROBLEM_MEDIA_TYPE.encode(), len(body))
            )
            self.transport.write(b"".join(head) + body)
        self._close(linger=True)

    def _close(self, *, linger: bool = False) -> None:
        """With ``linger``, end the answer and drop what the client still sends for a moment
        before closing, so that it gets to read the answer."""
        self._closed_here = True
        self._disarm()
        if self.transport.is_closing():
            return
        if linger and self.transport.can_write_eof():
            self.transport.write_eof()
            self._deadline = self.loop.call_later(LINGER_SECONDS, self.transport.close)
        else:
            self.transport.close()

    def _arm(self, seconds: float, expired: Callable[[], None]) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _client(self) -> str:
        if self.client is None:
            return "an unknown client"
        host, port = self.client
        return f"{host}:{port}"
