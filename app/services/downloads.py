"""A download bounded in size (a cap on the inflated body), time (a request's deadline and
its run's, enforced by shutting the connection down, which ends a blocked read at once;
so no connection is kept alive) and place (redirects followed within the configured
site only): the one way the feeds and ``oddsboost import`` of a URL read an answer."""

from __future__ import annotations

import json
import socket
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from app.domain.wording import counted
from app.services.run_bounds import STOPPED, RunBounds, RunDeadlineError, RunStoppedError, Stop
from app.settings import Settings

# As many as httpx follows by default.
MAX_REDIRECTS = 20
# The most bytes read from the connection, or inflated from them, in one step.
CHUNK_BYTES = 64 * 1024
# The one compression asked for: it is inflated in bounded steps here, whatever libraries
# are installed (httpx would inflate brotli or zstd in one unbounded step).
ACCEPTED_ENCODING = "gzip"
# Answers that have no body, whatever their headers say.
BODILESS = frozenset({204, 304})
# The trace events that hand over a request's new connection (httpcore's names).
CONNECTED = frozenset({"connection.connect_tcp.complete", "connection.start_tls.complete"})
NO_KEEPALIVE = httpx.Limits(max_keepalive_connections=0)


@dataclass(frozen=True, slots=True)
class DownloadLimits:
    """How far one download may go: ``max_bytes`` of answer (inflated), ``request_seconds``
    in all, ``read_timeout_seconds`` for each read (and to connect). The messages name the
    settings of the first two, which start with ``settings_prefix``."""

    max_bytes: int
    request_seconds: float
    read_timeout_seconds: float
    settings_prefix: str

    @classmethod
    def of(
        cls,
        settings: Settings,
        feed: Literal["football_data", "odds_api"],
        *,
        read_timeout_seconds: float,
    ) -> DownloadLimits:
        """The settings' limits of a download from ``feed`` (also ``oddsboost import``'s)."""
        if feed == "odds_api":
            max_bytes, seconds = settings.odds_api_max_bytes, settings.odds_api_request_seconds
        else:
            max_bytes = settings.football_data_max_bytes
            seconds = settings.football_data_request_seconds
        return cls(max_bytes, seconds, read_timeout_seconds, f"ODDSBOOST_{feed.upper()}")


@dataclass(frozen=True, slots=True)
class Download:
    """A whole answer, and the URL it was read from (where its redirects led)."""

    status_code: int
    reason_phrase: str
    headers: httpx.Headers
    content: bytes
    url: str

    def json(self) -> Any:
        return json.loads(self.content)


class AnswerRefusedError(httpx.TransportError):
    """An answer the download does not take (over the cap, redirected off the site, an
    encoding not asked for); not tried again, as the same request would get the same."""


class RequestDeadlineError(httpx.TimeoutException):
    """No whole answer within the request's deadline: its connection was shut down."""


def describe(error: Exception) -> str:
    """What went wrong, on one line; for a request that got no (whole) answer, without its
    URL, which may hold a key."""
    if isinstance(error, AnswerRefusedError | RequestDeadlineError):
        return str(error)
    if isinstance(error, httpx.TimeoutException):
        return "no answer in time"
    if isinstance(error, httpx.RemoteProtocolError):
        return "the answer was cut short"
    return f"{type(error).__name__}: {' '.join(str(error).split())}"


def bounded_transport() -> httpx.HTTPTransport:
    return httpx.HTTPTransport(limits=NO_KEEPALIVE)


@dataclass(frozen=True, slots=True)
class Downloader:
    """A run's way to download (made by :func:`open_downloader`): its client, the limits of
    each download, where redirects may lead (None: anywhere), and the run's bounds."""

    client: httpx.Client
    limits: DownloadLimits
    site: httpx.URL | None
    bounds: RunBounds

    def get(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Download:
        """GET ``url`` within the limits and the run's bounds. Raises
        :class:`AnswerRefusedError`, :class:`RequestDeadlineError` or httpx's own errors for
        this request; ``RunDeadlineError`` or ``RunStoppedError`` when the run must end."""
        limits, bounds = self.limits, self.bounds
        bounds.check()
        seconds = min(limits.request_seconds, bounds.remaining())
        cutter = _Cutter()
        request = self.client.build_request(
            "GET",
            url,
            headers=headers,
            params=params,
            timeout=httpx.Timeout(
                limits.read_timeout_seconds, connect=min(limits.read_timeout_seconds, seconds)
            ),
            extensions={"trace": cutter.trace},
        )
        with cutter.armed(seconds, bounds.stop):
            try:
                return _follow(self.client, request, limits, self.site)
            finally:
                # Also after an answer: a body that ends with its cut connection ends early,
                # with no error.
                cutter.explain(limits, bounds, run_deadline=seconds < limits.request_seconds)


@contextmanager
def open_downloader(
    limits: DownloadLimits,
    bounds: RunBounds,
    *,
    site: httpx.URL | None,
    base_url: str = "",
    headers: Mapping[str, str] | None = None,
    transport: httpx.BaseTransport | None = None,
) -> Iterator[Downloader]:
    """A downloader on a client of its own: gzip the one compression asked for, redirects
    left to the downloader; a ``transport`` given wraps :func:`bounded_transport`."""
    with httpx.Client(
        base_url=base_url,
        timeout=limits.read_timeout_seconds,
        headers={"Accept-Encoding": ACCEPTED_ENCODING, **(headers or {})},
        transport=transport or bounded_transport(),
        follow_redirects=False,
    ) as client:
        yield Downloader(client, limits, site, bounds)


def _follow(
    client: httpx.Client, request: httpx.Request, limits: DownloadLimits, site: httpx.URL | None
) -> Download:
    for _ in range(MAX_REDIRECTS + 1):
        response = client.send(request, stream=True, follow_redirects=False)
        try:
            following = response.next_request
            if following is None:
                return _read(response, limits)
            if site is not None and _origin(following.url) != _origin(site):
                raise AnswerRefusedError(
                    f"redirected to {following.url}, off the configured site {site}; not followed",
                    request=request,
                )
        finally:
            response.close()  # a redirect's own body is never read
        request = following
    raise httpx.TooManyRedirects(f"more than {MAX_REDIRECTS} redirects", request=request)


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return (url.scheme, url.host, url.port)


def _read(response: httpx.Response, limits: DownloadLimits) -> Download:
    """The body, up to ``limits.max_bytes`` once inflated."""
    has_body = response.status_code not in BODILESS and response.request.method != "HEAD"
    declared = _declared_length(response) if has_body else None
    inflate = _inflater(response)
    if declared is not None and inflate is _as_is and declared > limits.max_bytes:
        raise _too_large(limits, response.request)
    body = bytearray()
    received = 0
    for raw in response.iter_raw(CHUNK_BYTES):
        received += len(raw)
        for piece in inflate(raw):
            body += piece
            if len(body) > limits.max_bytes:
                raise _too_large(limits, response.request)
    if declared is not None and received != declared:
        raise httpx.RemoteProtocolError(
            f"body of {counted(received, 'byte')}, but Content-Length {declared}",
            request=response.request,
        )
    return Download(
        status_code=response.status_code,
        reason_phrase=response.reason_phrase,
        headers=response.headers,
        content=bytes(body),
        url=str(response.url),
    )


def _too_large(limits: DownloadLimits, request: httpx.Request) -> AnswerRefusedError:
    return AnswerRefusedError(
        f"the answer is larger than {limits.max_bytes:,} bytes ({limits.settings_prefix}"
        "_MAX_BYTES); not read further",
        request=request,
    )


def _declared_length(response: httpx.Response) -> int | None:
    declared = response.headers.get("Content-Length", "").strip()
    return int(declared) if declared.isdigit() else None


def _as_is(raw: bytes) -> Iterator[bytes]:
    yield raw


class _Gunzip:
    """Inflates gzip at most :data:`CHUNK_BYTES` at a time, however much a few bytes hold."""

    def __init__(self, request: httpx.Request) -> None:
        self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._request = request

    def __call__(self, raw: bytes) -> Iterator[bytes]:
        pending = raw
        while pending:
            try:
                yield self._inflater.decompress(pending, CHUNK_BYTES)
            except zlib.error as error:
                raise AnswerRefusedError(
                    f"its gzip body cannot be inflated: {error}", request=self._request
                ) from None
            pending = self._inflater.unconsumed_tail


def _inflater(response: httpx.Response) -> Callable[[bytes], Iterator[bytes]]:
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return _as_is
    if encoding in ("gzip", "x-gzip"):
        return _Gunzip(response.request)
    raise AnswerRefusedError(
        f"sent in the encoding {encoding!r}, which was not asked for", request=response.request
    )


DEADLINE = "deadline"
STOP = "stop"


class _Cutter:
    """Shuts a request's connection down when its time is up or its run is stopped, and
    says which; a read blocked on the connection then returns at once."""

    def __init__(self) -> None:
        self._guard = threading.RLock()  # re-entrant: a stop may come from a signal handler
        self._socket: socket.socket | None = None
        self._why: str | None = None

    def trace(self, event: str, info: Mapping[str, Any]) -> None:
        """httpcore's trace extension: keeps the socket of each connection as it is made."""
        if event not in CONNECTED or info.get("return_value") is None:
            return
        connection = info["return_value"].get_extra_info("socket")
        with self._guard:
            self._socket = connection
            cut = self._why is not None
        if cut:
            _shut(connection)

    def cut(self, why: str) -> None:
        with self._guard:
            self._why = self._why or why
            connection = self._socket
        _shut(connection)

    @contextmanager
    def armed(self, seconds: float, stop: Stop) -> Iterator[None]:
        timer = threading.Timer(max(seconds, 0.0), self.cut, args=(DEADLINE,))
        timer.daemon = True
        with stop.calling(lambda: self.cut(STOP)):
            timer.start()
            try:
                yield
            finally:
                timer.cancel()

    def explain(self, limits: DownloadLimits, bounds: RunBounds, *, run_deadline: bool) -> None:
        """If the request was cut, raise why instead of what the cut made of it."""
        with self._guard:
            why = self._why
        if why == STOP:
            raise RunStoppedError(STOPPED)
        if why == DEADLINE and run_deadline:
            raise RunDeadlineError(bounds.deadline_passed())
        if why == DEADLINE:
            raise RequestDeadlineError(
                f"no whole answer within {limits.request_seconds:g} s "
                f"({limits.settings_prefix}_REQUEST_SECONDS)"
            )


def _shut(connection: socket.socket | None) -> None:
    if connection is None:
        return
    with suppress(OSError):  # already closed
        # The plain socket's own shutdown, also for a TLS one: SSLSocket.shutdown would
        # first drop its TLS state under a read that may be using it.
        socket.socket.shutdown(connection, socket.SHUT_RDWR)
