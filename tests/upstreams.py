"""Local HTTP servers that play an upstream site, misbehaving as the feeds' tests need: an
answer far larger than any real one (with or without Content-Length, or gzip that inflates
to it), one that comes a byte at a time, a redirect to another host. Loopback only:
127.0.0.1, and 127.0.0.2 as "another host" (a different address, so a different origin).
"""

from __future__ import annotations

import gzip
import http.server
import io
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

ANOTHER_HOST = "127.0.0.2"
# Far past every cap the tests set, and past any real answer.
HUGE = 500 * 1024 * 1024
BLOCK = 64 * 1024
# Between two bytes of a trickle: well inside any read timeout the tests set.
TRICKLE_EVERY = 0.05
HANGING_UP = (BrokenPipeError, ConnectionResetError)


@contextmanager
def http_server(
    handler: Callable[..., http.server.BaseHTTPRequestHandler], host: str = "127.0.0.1"
) -> Iterator[str]:
    """A local HTTP server in a thread, for as long as the block runs; yields its base URL."""
    server = http.server.ThreadingHTTPServer((host, 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def send_huge(
    handler: http.server.BaseHTTPRequestHandler,
    *,
    head: bytes,
    filler: bytes,
    declared: bool,
    size: int = HUGE,
    headers: dict[str, str] | None = None,
) -> None:
    """200 with ``size`` bytes: ``head``, then ``filler`` over and over. With
    ``Content-Length`` when ``declared``, else ended by closing the connection. Stops as
    soon as the client hangs up."""
    handler.send_response(200)
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    if declared:
        handler.send_header("Content-Length", str(size))
    else:
        handler.send_header("Connection", "close")
    handler.end_headers()
    handler.close_connection = True
    block = (filler * (BLOCK // len(filler) + 1))[:BLOCK]
    with suppress(*HANGING_UP):
        handler.wfile.write(head)
        sent = len(head)
        while sent < size:
            piece = block[: size - sent]
            handler.wfile.write(piece)
            sent += len(piece)


def gzip_bomb(head: bytes, filler: bytes, size: int = HUGE) -> bytes:
    """``head`` and the first line of ``filler`` repeated up to ``size`` bytes, gzipped:
    small on the wire, ``size`` once inflated. (One short line repeated compresses in
    seconds; a long stretch repeated, longer than gzip's window, would take minutes.)"""
    line = filler.split(b"\n")[0] + b"\n"
    block = (line * (BLOCK // len(line) + 1))[:BLOCK]
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9) as packed:
        packed.write(head)
        written = len(head)
        while written < size:
            piece = block[: size - written]
            packed.write(piece)
            written += len(piece)
    return buffer.getvalue()


def send_gzip_bomb(
    handler: http.server.BaseHTTPRequestHandler, bomb: bytes, headers: dict[str, str] | None = None
) -> None:
    handler.send_response(200)
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Encoding", "gzip")
    handler.send_header("Content-Length", str(len(bomb)))
    handler.end_headers()
    with suppress(*HANGING_UP):
        handler.wfile.write(bomb)


def send_trickle(
    handler: http.server.BaseHTTPRequestHandler, released: threading.Event, *, headers_too: bool
) -> None:
    """A 200 whose bytes come one every :data:`TRICKLE_EVERY` seconds until ``released``
    (or the client hangs up): the body's when ``headers_too`` is false, else the headers'
    already, which never end. Each byte comes well inside a read timeout."""
    handler.close_connection = True
    with suppress(*HANGING_UP):
        if headers_too:
            handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        else:
            handler.send_response(200)
            handler.send_header("Connection", "close")  # the body ends with the connection
            handler.end_headers()
        handler.wfile.flush()
        while not released.wait(TRICKLE_EVERY):
            handler.wfile.write(b"a")
            handler.wfile.flush()


def send_redirect(handler: http.server.BaseHTTPRequestHandler, location: str) -> None:
    handler.send_response(302)
    handler.send_header("Location", location)
    handler.send_header("Content-Length", "0")
    handler.end_headers()
