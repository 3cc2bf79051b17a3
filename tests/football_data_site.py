"""Football-Data.co.uk as the tests play it: files written as the site writes them (its
fixtures.csv of the main leagues and new_league_fixtures.csv of the extra ones), and a local
copy of the site that serves documents as the site does (ETag, Last-Modified, 304 Not
Modified) or misbehaves as a test asks."""

from __future__ import annotations

import csv
import http.server
import io
import threading
from dataclasses import dataclass, field
from typing import Any

from tests.upstreams import gzip_bomb, send_gzip_bomb, send_huge, send_redirect, send_trickle

# What only the match itself tells: the fixtures file leaves these blank.
AFTER_THE_MATCH = (
    "FTHG", "FTAG", "FTR", "HTHG", "HTAG", "HTR", "HS", "AS", "HST", "AST",
    "HF", "AF", "HC", "AC", "HY", "AY", "HR", "AR",
)  # fmt: skip

# The results header of the main leagues since 2019/20, as the site publishes it (Div to
# AvgCAHA). Its fixtures.csv has the same columns less what is known only after the match:
# the goals, results and match statistics.
RESULTS_HEADER_LINE = (
    "Div,Date,Time,HomeTeam,AwayTeam,FTHG,FTAG,FTR,HTHG,HTAG,HTR,Referee,HS,AS,HST,AST,HF,AF,"
    "HC,AC,HY,AY,HR,AR,B365H,B365D,B365A,BWH,BWD,BWA,IWH,IWD,IWA,PSH,PSD,PSA,WHH,WHD,WHA,VCH,"
    "VCD,VCA,MaxH,MaxD,MaxA,AvgH,AvgD,AvgA,B365>2.5,B365<2.5,P>2.5,P<2.5,Max>2.5,Max<2.5,"
    "Avg>2.5,Avg<2.5,AHh,B365AHH,B365AHA,PAHH,PAHA,MaxAHH,MaxAHA,AvgAHH,AvgAHA,B365CH,B365CD,"
    "B365CA,BWCH,BWCD,BWCA,IWCH,IWCD,IWCA,PSCH,PSCD,PSCA,WHCH,WHCD,WHCA,VCCH,VCCD,VCCA,MaxCH,"
    "MaxCD,MaxCA,AvgCH,AvgCD,AvgCA,B365C>2.5,B365C<2.5,PC>2.5,PC<2.5,MaxC>2.5,MaxC<2.5,"
    "AvgC>2.5,AvgC<2.5,AHCh,B365CAHH,B365CAHA,PCAHH,PCAHA,MaxCAHH,MaxCAHA,AvgCAHH,AvgCAHA"
)
RESULTS_HEADER = RESULTS_HEADER_LINE.split(",")
FIXTURES_HEADER = [name for name in RESULTS_HEADER if name not in AFTER_THE_MATCH]


def fixtures_file(rows: list[dict[str, str]]) -> bytes:
    """fixtures.csv as the site serves it: a byte-order mark, CRLF, blank cells where unknown."""
    lines = [",".join(FIXTURES_HEADER)] + [
        ",".join(row.get(name, "") for name in FIXTURES_HEADER) for row in rows
    ]
    return b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n"


MAIN_FIXTURES = fixtures_file(
    [
        {
            "Div": "E0",
            "Date": "28/11/2026",
            "Time": "15:00",
            "HomeTeam": "Arsenal",
            "AwayTeam": "Chelsea",
            "Referee": "M Oliver",
            **dict(zip(("B365H", "B365D", "B365A"), ("2.1", "3.4", "3.6"), strict=True)),
            **dict(zip(("PSH", "PSD", "PSA"), ("2.15", "3.45", "3.55"), strict=True)),
            **dict(zip(("MaxH", "MaxD", "MaxA"), ("2.2", "3.5", "3.7"), strict=True)),
        },
        {
            "Div": "SP1",
            "Date": "29/11/2026",
            "Time": "20:00",
            "HomeTeam": "Barcelona",
            "AwayTeam": "Getafe",
            **dict(zip(("B365H", "B365D", "B365A"), ("1.2", "6.5", "13"), strict=True)),
        },
        {"Div": "SC0", "Date": "05/12/2026", "Time": "12:30", "HomeTeam": "Celtic"}
        | {"AwayTeam": "Rangers"},
    ]
)


# new_league_fixtures.csv: the extra leagues' layout with no Season and no result columns.
EXTRA_FIXTURES = (
    b"Country,League,Date,Time,Home,Away,PSH,PSD,PSA,MaxH,MaxD,MaxA,AvgH,AvgD,AvgA\r\n"
    b"Brazil,Serie A,29/11/2026,19:00,Flamengo,Santos,1.7,3.6,5.0,1.75,3.8,5.5,1.68,3.55,4.9\r\n"
    b"Norway,Eliteserien,29/11/2026,17:00,Bodo/Glimt,Molde,,,,1.65,4.2,4.8,1.6,4.0,4.6\r\n"
    b"Austria,Bundesliga,29/11/2026,16:30,Salzburg,Rapid Vienna,,,,1.5,4.5,6.0,1.47,4.3,5.7\r\n"
    b"Mexico,Liga MX,30/11/2026,02:00,Club America,Monterrey,,,,1.9,3.7,4.3,1.85,3.58,3.74\r\n"
)


# What a gzip bomb inflates to: far past the caps these tests set.
BOMB = 50 * 1024 * 1024


@dataclass
class Served:
    """One document of the local site and how it answers."""

    body: bytes
    etag: str
    last_modified: str = "Mon, 13 May 2019 08:00:00 GMT"
    status: int = 200
    truncated: bool = False  # promises the whole body, sends half and hangs up
    stalled: bool = False  # answers nothing until the test ends
    loops: bool = False  # redirects to itself, for ever
    huge: str | None = None  # "declared", "undeclared" or "gzip": the body repeated, 500 MB
    trickle: str | None = None  # "body" or "headers": a byte at a time until the test ends
    location: str | None = None  # redirects there
    retry_after: str | None = None  # with status 429 or 503: the Retry-After sent

    @property
    def misbehaves(self) -> bool:
        return bool(self.stalled or self.loops or self.huge or self.trickle or self.location)


@dataclass
class Site:
    documents: dict[str, Served] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def asked(self, path: str) -> list[dict[str, str]]:
        """The headers of each request for ``path``, in order."""
        return [headers for asked, headers in self.requests if asked == path]


def misbehave(handler: http.server.BaseHTTPRequestHandler, served: Served, site: Site) -> None:
    """Answer nothing until the test ends, redirect (to the same path for ever, or where
    ``location`` says), send a huge body, or trickle one."""
    head, _, rows = served.body.partition(b"\n")
    if served.stalled:
        site.release.wait(60)
        handler.close_connection = True
    elif served.huge == "gzip":
        send_gzip_bomb(handler, gzip_bomb(head + b"\n", rows, size=BOMB))
    elif served.huge is not None:
        send_huge(handler, head=head + b"\n", filler=rows, declared=served.huge == "declared")
    elif served.trickle is not None:
        send_trickle(handler, site.release, headers_too=served.trickle == "headers")
    else:
        send_redirect(handler, served.location or handler.path)


def empty(
    handler: http.server.BaseHTTPRequestHandler, status: int, retry_after: str | None = None
) -> None:
    handler.send_response(status)
    handler.send_header("Content-Length", "0")
    if retry_after is not None:
        handler.send_header("Retry-After", retry_after)
    handler.end_headers()


def send_document(handler: http.server.BaseHTTPRequestHandler, served: Served) -> None:
    """As the site answers: its status, or 304 to the ETag it holds, or the file."""
    if served.status != 200:
        empty(handler, served.status, served.retry_after)
        return
    if handler.headers.get("If-None-Match") == served.etag:
        empty(handler, 304)
        return
    handler.send_response(200)
    handler.send_header("Content-Type", "text/csv")
    handler.send_header("Content-Length", str(len(served.body)))
    handler.send_header("ETag", served.etag)
    handler.send_header("Last-Modified", served.last_modified)
    handler.end_headers()
    if served.truncated:
        handler.wfile.write(served.body[: len(served.body) // 2])
        handler.close_connection = True
    else:
        handler.wfile.write(served.body)


def site_handler(site: Site) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            path = self.path.lstrip("/")
            site.requests.append((path, {k.lower(): v for k, v in self.headers.items()}))
            served = site.documents.get(path)
            if served is None:
                empty(self, 404)
            elif served.misbehaves:
                misbehave(self, served, site)
            else:
                send_document(self, served)

        def log_message(self, *_args: Any) -> None:
            return

    return Handler


def read_rows(content: bytes) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(content.decode("utf-8-sig"), newline="")))
    return rows[0], [row for row in rows[1:] if any(row)]


def csv_bytes(header: list[str], rows: list[list[str]], *, site_style: bool = False) -> bytes:
    """A CSV file; ``site_style``: with the byte-order mark and CRLF of the site's files."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n" if site_style else "\n").writerows([header, *rows])
    text = out.getvalue().encode()
    return b"\xef\xbb\xbf" + text if site_style else text
