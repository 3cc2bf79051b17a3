"""The Odds API as the tests play it: a local server that answers as The Odds API does (its
JSON, its quota headers, its errors), one scripted answer after another, or misbehaves as a
test asks."""

from __future__ import annotations

import http.server
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.upstreams import gzip_bomb, send_gzip_bomb, send_huge, send_redirect, send_trickle

FIXTURES = Path(__file__).parent / "fixtures"
KEY = "k3y-of-the-odds-api-5ecret-7f1c"
EPL = "/v4/sports/soccer_epl/odds"
BUNDESLIGA = "/v4/sports/soccer_germany_bundesliga/odds"
SPORTS = "/v4/sports"
# The fixture's two EPL events: four bookmakers' h2h prices, one of them (William Hill's)
# updated after kickoff, so three pre-match quotes.
EPL_EVENTS: list[dict[str, Any]] = json.loads((FIXTURES / "the_odds_api_epl.json").read_text())
# What The Odds API lists at /v4/sports (an excerpt of its format).
SPORTS_LIST = [
    {
        "key": "soccer_epl",
        "group": "Soccer",
        "title": "EPL",
        "description": "English Premier League",
        "active": True,
        "has_outrights": False,
    }
]


def quota(remaining: int, used: int, last: int) -> dict[str, str]:
    return {
        "x-requests-remaining": str(remaining),
        "x-requests-used": str(used),
        "x-requests-last": str(last),
    }


@dataclass
class Answer:
    """One scripted answer: ``hold`` makes the server wait for it first (a slow answer);
    ``cut_to`` sends only that many bytes of a body whose full length it announces;
    ``huge`` sends the body's events over and over, 500 MB ("declared" or "undeclared"
    length) or a gzip body that inflates to 50 MB ("gzip"); ``trickle`` sends a byte at a
    time until the test ends; ``location`` redirects there."""

    status: int = 200
    body: bytes = b"[]"
    headers: dict[str, str] = field(default_factory=dict)
    hold: threading.Event | None = None
    cut_to: int | None = None
    huge: str | None = None
    trickle: bool = False
    location: str | None = None


def events_answer(events: list[dict[str, Any]], headers: dict[str, str]) -> Answer:
    return Answer(body=json.dumps(events).encode(), headers=headers)


class FakeOddsApi:
    """Answers per path, in order; the last answer of a path is repeated. Every request's
    path and query is recorded."""

    def __init__(self) -> None:
        self.answers: dict[str, list[Answer]] = {
            SPORTS: [Answer(body=json.dumps(SPORTS_LIST).encode(), headers=quota(500, 0, 0))],
            EPL: [events_answer(EPL_EVENTS, quota(498, 2, 2))],
            BUNDESLIGA: [Answer(body=b"[]", headers=quota(496, 4, 2))],
        }
        self.seen: list[tuple[str, dict[str, list[str]]]] = []
        self.released = threading.Event()
        self.lock = threading.Lock()

    def script(self, path: str, *answers: Answer) -> None:
        self.answers[path] = list(answers)

    def paths(self) -> list[str]:
        return [path for path, _ in self.seen]

    def next_answer(self, target: str) -> Answer:
        parts = urlsplit(target)
        with self.lock:
            self.seen.append((parts.path, parse_qs(parts.query)))
            queue = self.answers.get(parts.path)
            if not queue:
                return Answer(404, b'{"message": "Unknown sport."}')
            return queue.pop(0) if len(queue) > 1 else queue[0]


def misbehave(
    handler: http.server.BaseHTTPRequestHandler, answer: Answer, api: FakeOddsApi
) -> None:
    """A huge answer, a trickle, or a redirect."""
    filler = answer.body.strip(b"[]") + b","
    if answer.huge == "gzip":
        send_gzip_bomb(handler, gzip_bomb(b"[", filler, size=50 * 1024 * 1024), answer.headers)
    elif answer.huge is not None:
        send_huge(
            handler,
            head=b"[",
            filler=filler,
            declared=answer.huge == "declared",
            headers=answer.headers,
        )
    elif answer.trickle:
        send_trickle(handler, api.released, headers_too=False)
    else:
        send_redirect(handler, str(answer.location))


def handler_for(api: FakeOddsApi) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer = api.next_answer(self.path)
            if answer.hold is not None:
                answer.hold.wait(timeout=30)
            if answer.huge or answer.trickle or answer.location:
                misbehave(self, answer, api)
                return
            try:
                self._answer(answer)
            except (BrokenPipeError, ConnectionResetError):
                # A held answer's client may have timed out and left: that is the test.
                self.close_connection = True

        def _answer(self, answer: Answer) -> None:
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer.body)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if answer.cut_to is None:
                self.wfile.write(answer.body)
                return
            self.wfile.write(answer.body[: answer.cut_to])
            self.wfile.flush()
            self.close_connection = True

        def log_message(self, *_args: Any) -> None:
            return

    return Handler
