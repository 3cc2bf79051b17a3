"""A webhook receiver on loopback for the alerts' tests and benchmark: a real HTTP server
that records every request it gets (path, headers, body) and answers as scripted: a status,
a redirect, or a hang until released."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.helpers import DEADLINE_SECONDS


@dataclass(frozen=True, slots=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # when the body was in (Unix seconds)


@dataclass(frozen=True, slots=True)
class Reply:
    """An answer: ``status`` with ``body``; with ``location``, a redirect there; ``hang``:
    none until the receiver is released (or closes)."""

    status: int = 200
    body: bytes = b"ok"
    location: str | None = None
    hang: bool = False
    delay_seconds: float = 0.0


@dataclass
class WebhookReceiver:
    """What the server got, and what it answers next (``replies`` in turn, then ``usual``)."""

    port: int = 0
    replies: deque[Reply] = field(default_factory=deque)
    usual: Reply = field(default_factory=Reply)
    received: list[Received] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)
    released: threading.Event = field(default_factory=threading.Event)
    hanging: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def answer_with(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def next_reply(self) -> Reply:
        with self.changed:
            return self.replies.popleft() if self.replies else self.usual

    def record(self, request: Received) -> None:
        with self.changed:
            self.received.append(request)
            self.changed.notify_all()

    def wait_for(self, count: int, seconds: float = DEADLINE_SECONDS) -> list[Received]:
        """The first ``count`` requests, once they have come (fails after ``seconds``)."""
        with self.changed:
            if not self.changed.wait_for(lambda: len(self.received) >= count, seconds):
                raise AssertionError(f"{len(self.received)} requests came, not {count}")
            return list(self.received[:count])


def _handler(receiver: WebhookReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            receiver.record(Received(self.path, dict(self.headers.items()), body, time.time()))
            reply = receiver.next_reply()
            if reply.hang:
                receiver.hanging.set()
                receiver.released.wait(DEADLINE_SECONDS)
                return
            if reply.delay_seconds:
                receiver.released.wait(reply.delay_seconds)
            self.send_response(reply.status)
            if reply.location is not None:
                self.send_header("Location", reply.location)
            self.send_header("Content-Length", str(len(reply.body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, *_args: Any) -> None:
            return

    return Handler


@contextmanager
def webhook_receiver() -> Iterator[WebhookReceiver]:
    """A receiver listening on a free loopback port for the block."""
    receiver = WebhookReceiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    server.daemon_threads = True
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.released.set()
        server.shutdown()
        server.server_close()
        thread.join(DEADLINE_SECONDS)
