"""The dashboard's charts, drawn on the server as inline SVG.

The pages' Content-Security-Policy allows no script and no inline style, so a chart is
markup alone: shapes placed by their attributes and coloured by the classes of the one
stylesheet (``app/api/static/dashboard.css``). Every text a chart shows is escaped.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import tzinfo

import numpy as np
from markupsafe import Markup, escape

from app.domain.bet_book import BankrollPoint as BookBankrollPoint
from app.domain.bookmakers import display_name
from app.domain.track_record_scores import BankrollPoint, DayBucket
from app.domain.version_records import BookmakerWeight
from app.domain.wording import counted
from app.services.dashboard import PriceHistory, ServedReliability
from app.services.dashboard_bets import BetClv

# The plotting area inside a line chart's box, in SVG user units.
WIDTH, HEIGHT = 640.0, 220.0
LEFT, RIGHT, TOP, BOTTOM = 56.0, 12.0, 12.0, 28.0
# Classes that colour a chart's series in turn (the stylesheet defines them).
SERIES_CLASSES = ("s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7")
# The reliability diagram: a square from 0 to 1 on both axes, placed at (LEFT, TOP), and
# the radius of the point of its largest bin (a point's area is in proportion to its count).
SQUARE = 300.0
LARGEST_RADIUS = 8.0
OUTCOME_NAMES = ("home win", "draw", "away win")


@dataclass(frozen=True, slots=True)
class Series:
    """A line: its name and its points (x as a number, e.g. seconds since the epoch)."""

    name: str
    x: Sequence[float]
    y: Sequence[float]


def _trusted(svg: str) -> Markup:
    # Every text put into ``svg`` was escaped where it was put; the rest are numbers.
    return Markup(svg)  # noqa: S704


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _svg(element_id: str, title: str, width: float, height: float, body: str) -> str:
    return (
        f'<svg class="chart" id="{escape(element_id)}" viewBox="0 0 {_number(width)}'
        f' {_number(height)}" width="{_number(width)}" height="{_number(height)}" role="img"'
        f' aria-label="{escape(title)}"><title>{escape(title)}</title>{body}</svg>'
    )


def _figure(svg: str, legend: Sequence[tuple[str, str]]) -> Markup:
    """``svg`` with a legend of (series class, name) pairs beneath it."""
    keys = "".join(
        f'<li><span class="key {kind}"></span>{escape(name)}</li>' for kind, name in legend
    )
    return _trusted(
        f'<figure>{svg}<figcaption><ul class="legend">{keys}</ul></figcaption></figure>'
    )


def _path(kind: str, xs: Sequence[float], ys: Sequence[float], title: str = "") -> str:
    points = " L".join(f"{_number(x)},{_number(y)}" for x, y in zip(xs, ys, strict=True))
    named = f"<title>{escape(title)}</title>" if title else ""
    return f'<path class="line {kind}" d="M{points}">{named}</path>'


def probability_bar(home: float, draw: float, away: float) -> Markup:
    """Three probabilities as one stacked bar: home, draw, away from left to right."""
    # Plain floats: drawn for every row of the board, where numpy's scalars cost more
    # than the arithmetic.
    width = 90.0
    parts = []
    start = 0.0
    for kind, probability in (("home", home), ("draw", draw), ("away", away)):
        share = float(probability) * width
        parts.append(
            f'<rect class="{kind}" x="{_number(start)}" y="0" width="{_number(share)}"'
            ' height="10"/>'
        )
        start += share
    label = escape(f"home {home:.1%}, draw {draw:.1%}, away {away:.1%}")
    return _trusted(
        f'<svg class="bar" width="{_number(width)}" height="10" viewBox="0 0 {_number(width)} 10"'
        f' role="img" aria-label="{label}">{"".join(parts)}</svg>'
    )


def _scale(values: np.ndarray, low: float, high: float, start: float, end: float) -> np.ndarray:
    span = high - low
    if span <= 0:
        return np.full_like(values, (start + end) / 2)
    return start + (values - low) / span * (end - start)


def line_chart(
    series: Sequence[Series],
    *,
    element_id: str,
    title: str,
    x_labels: tuple[str, str],
    y_format: str = "{:.2f}",
) -> Markup:
    """Lines of ``series`` on shared axes; ``x_labels`` name the first and last x."""
    xs = np.concatenate([np.asarray(line.x, dtype=np.float64) for line in series])
    ys = np.concatenate([np.asarray(line.y, dtype=np.float64) for line in series])
    x_low, x_high = float(xs.min()), float(xs.max())
    y_low, y_high = float(ys.min()), float(ys.max())
    shapes: list[str] = []
    legend: list[tuple[str, str]] = []
    for index, line in enumerate(series):
        kind = SERIES_CLASSES[index % len(SERIES_CLASSES)]
        px = _scale(np.asarray(line.x, dtype=np.float64), x_low, x_high, LEFT, WIDTH - RIGHT)
        py = _scale(np.asarray(line.y, dtype=np.float64), y_low, y_high, HEIGHT - BOTTOM, TOP)
        shapes.append(_path(kind, px.tolist(), py.tolist(), line.name))
        if len(px) == 1:
            # A line of one point has no length: mark the point instead.
            shapes.append(
                f'<circle class="point {kind}" cx="{_number(px[0])}" cy="{_number(py[0])}" r="4"/>'
            )
        legend.append((kind, line.name))
    axes = (
        f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}"'
        f' y2="{HEIGHT - BOTTOM}"/>'
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}"/>'
        f'<text class="tick" x="{LEFT - 4}" y="{TOP + 4}" text-anchor="end">'
        f"{escape(y_format.format(y_high))}</text>"
        f'<text class="tick" x="{LEFT - 4}" y="{HEIGHT - BOTTOM}" text-anchor="end">'
        f"{escape(y_format.format(y_low))}</text>"
        f'<text class="tick" x="{LEFT}" y="{HEIGHT - 8}">{escape(x_labels[0])}</text>'
        f'<text class="tick" x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" text-anchor="end">'
        f"{escape(x_labels[1])}</text>"
    )
    return _figure(_svg(element_id, title, WIDTH, HEIGHT, axes + "".join(shapes)), legend)


# The dashboard's charts, from the records its pages show.


def shown_time(moment: dt.datetime, zone: tzinfo, *, weekday: bool = False) -> str:
    """``moment`` as people read it in ``zone``, with the zone's abbreviation."""
    shape = "%a %d %b %Y %H:%M %Z" if weekday else "%d %b %Y %H:%M %Z"
    return moment.astimezone(zone).strftime(shape)


def price_history(history: Sequence[PriceHistory], outcome: str, zone: tzinfo) -> Markup:
    """Each bookmaker's price of one outcome (``home``, ``draw``, ``away``) over time, its
    first and last times shown in ``zone``."""
    series = [
        Series(
            display_name(line.bookmaker),
            [point.at.timestamp() for point in line.points],
            [getattr(point, outcome) for point in line.points],
        )
        for line in history
    ]
    moments = [point.at for line in history for point in line.points]
    suffix = "" if outcome == "home" else f"-{outcome}"
    return line_chart(
        series,
        element_id=f"price-history{suffix}",
        title=f"Price of a {outcome} result by bookmaker",
        x_labels=(shown_time(min(moments), zone), shown_time(max(moments), zone)),
    )


def weights(bookmakers: Sequence[BookmakerWeight]) -> Markup:
    """Each bookmaker's weight as a horizontal bar from a shared zero, labelled."""
    row, label_width, bar_width = 22.0, 80.0, 440.0
    values = np.asarray([bookmaker.weight for bookmaker in bookmakers], dtype=np.float64)
    largest = float(np.abs(values).max()) if len(values) else 0.0
    widths = np.abs(values) / largest * bar_width if largest > 0 else np.zeros_like(values)
    rows = [
        f'<text class="tick" x="{label_width - 6}" y="{_number(i * row + 15)}"'
        f' text-anchor="end">{escape(bookmaker.code)}</text>'
        f'<rect class="weight" x="{label_width}" y="{_number(i * row + 4)}"'
        f' width="{_number(max(w, 1.0))}" height="{_number(row - 8)}">'
        f"<title>{escape(display_name(bookmaker.code))} ({escape(bookmaker.code)}):"
        f" {bookmaker.weight:.3f}</title></rect>"
        f'<text class="tick" x="{_number(label_width + max(w, 1.0) + 6)}"'
        f' y="{_number(i * row + 15)}">{bookmaker.weight:.3f}</text>'
        for i, (bookmaker, w) in enumerate(zip(bookmakers, widths, strict=True))
    ]
    title = "Weight of each bookmaker (AdaBoost.M2 α summed over its rounds)"
    width, height = label_width + bar_width + 60, row * len(bookmakers) + 4
    return _trusted(_svg("weights", title, width, height, "".join(rows)))


def daily_log_loss(days: Sequence[DayBucket], best_bookmaker: str | None) -> Markup:
    """Served, consensus and best-bookmaker log loss per day, each a running mean over the
    days so far weighted by the matches it was scored on (one day alone is too noisy to
    read). The best bookmaker's line starts on its first quoted day and holds its mean
    through days it quoted nothing."""
    x = [float(day.day.toordinal()) for day in days]
    matches = np.array([day.matches for day in days], dtype=np.float64)
    lines = [
        Series("served", x, _running_mean(matches, [day.served_log_loss for day in days])),
        Series("consensus", x, _running_mean(matches, [day.consensus_log_loss for day in days])),
    ]
    quoted = np.array([day.best_bookmaker_matches for day in days], dtype=np.float64)
    scored = np.cumsum(quoted) > 0
    if best_bookmaker is not None and scored.any():
        losses = [day.best_bookmaker_log_loss or 0.0 for day in days]
        means = np.asarray(_running_mean(quoted, losses))
        best_x = np.asarray(x)[scored].tolist()
        lines.append(Series(f"best bookmaker ({best_bookmaker})", best_x, means[scored].tolist()))
    return line_chart(
        lines,
        element_id="log-loss",
        title="Log loss to date: served against the consensus and the best bookmaker",
        x_labels=(days[0].day.isoformat(), days[-1].day.isoformat()),
        y_format="{:.3f}",
    )


def _running_mean(weights: np.ndarray, values: Sequence[float]) -> list[float]:
    """The mean to date of ``values`` weighted by ``weights`` (NaN before any weight)."""
    counted = np.cumsum(weights)
    total = np.cumsum(weights * np.asarray(values, dtype=np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        return [float(mean) for mean in total / counted]


def time_line(
    moments: Sequence[dt.datetime],
    values: Sequence[float],
    zone: tzinfo,
    *,
    name: str,
    element_id: str,
    title: str,
    y_format: str = "{:.2f}",
) -> Markup:
    """One line of ``values`` over ``moments`` (a bankroll over the bets, say), its first
    and last moments shown in ``zone``."""
    return line_chart(
        [Series(name, [moment.timestamp() for moment in moments], list(values))],
        element_id=element_id,
        title=title,
        x_labels=(shown_time(moments[0], zone), shown_time(moments[-1], zone)),
        y_format=y_format,
    )


def bankroll(points: Sequence[BankrollPoint], zone: tzinfo) -> Markup:
    return time_line(
        [point.kickoff for point in points],
        [point.bankroll for point in points],
        zone,
        name="bankroll",
        element_id="bankroll",
        title="Kelly bankroll of the value bets (starting at 1)",
        y_format="{:.3f}",
    )


def _square_x(probability: float) -> float:
    return LEFT + probability * SQUARE


def _square_y(frequency: float) -> float:
    return TOP + (1.0 - frequency) * SQUARE


def reliability_diagram(served: ServedReliability) -> Markup:
    """Per outcome, the share of matches whose outcome happened against the mean served
    probability of each bin: on the diagonal, the probabilities meant what they said.
    Each point's area is in proportion to its bin's matches (a bin of few matches among
    many stays a visible dot), its title says how many."""
    largest = max(max(curve.count) for curve in served.curves)
    shapes: list[str] = []
    legend: list[tuple[str, str]] = []
    for index, (name, curve) in enumerate(zip(OUTCOME_NAMES, served.curves, strict=True)):
        kind = SERIES_CLASSES[index]
        xs = [_square_x(p) for p in curve.predicted]
        ys = [_square_y(f) for f in curve.observed]
        if len(xs) > 1:
            shapes.append(_path(kind, xs, ys))
        for x, y, p, f, n in zip(xs, ys, curve.predicted, curve.observed, curve.count, strict=True):
            radius = max(LARGEST_RADIUS * float(np.sqrt(n / largest)), 2.0)
            label = escape(f"{name}: served {p:.1%} on average, happened in {f:.1%} of")
            shapes.append(
                f'<circle class="point {kind}" cx="{_number(x)}" cy="{_number(y)}"'
                f' r="{_number(radius)}" data-count="{int(n)}">'
                f"<title>{label} {escape(counted(int(n), 'match'))}</title></circle>"
            )
        legend.append((kind, name))
    title = f"Reliability of the served predictions on {counted(served.matches, 'settled match')}"
    width, height = LEFT + SQUARE + RIGHT, TOP + SQUARE + BOTTOM + 16
    return _figure(
        _svg("reliability", title, width, height, _square_axes() + "".join(shapes)), legend
    )


def _square_axes() -> str:
    """The reliability diagram's axes, their ticks at 0, ½ and 1, and the diagonal."""
    bottom, right = TOP + SQUARE, LEFT + SQUARE
    ticks = "".join(
        f'<text class="tick" x="{_number(_square_x(v))}" y="{_number(bottom + 14)}"'
        f' text-anchor="middle">{v:g}</text>'
        f'<text class="tick" x="{_number(LEFT - 6)}" y="{_number(_square_y(v) + 4)}"'
        f' text-anchor="end">{v:g}</text>'
        for v in (0.0, 0.5, 1.0)
    )
    return (
        f'<line class="axis" x1="{LEFT}" y1="{bottom}" x2="{right}" y2="{bottom}"/>'
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}"/>'
        f'<line class="diagonal" x1="{LEFT}" y1="{bottom}" x2="{right}" y2="{TOP}">'
        "<title>perfect calibration</title></line>"
        f"{ticks}"
        f'<text class="tick" x="{_number(LEFT + SQUARE / 2)}" y="{_number(bottom + 30)}"'
        ' text-anchor="middle">served probability</text>'
        f'<text class="tick" x="{_number(LEFT - 30)}" y="{_number(TOP + SQUARE / 2)}"'
        f' text-anchor="middle" transform="rotate(-90 {_number(LEFT - 30)}'
        f' {_number(TOP + SQUARE / 2)})">observed frequency</text>'
    )


# The bettor's book.


def book_bankroll(points: Sequence[BookBankrollPoint], starting_bankroll: float) -> Markup:
    """The bankroll after each settled bet, one point per bet in the order of their matches'
    kickoffs, from ``starting_bankroll``."""
    order = [float(index) for index in range(1, len(points) + 1)]
    return line_chart(
        [Series("bankroll", order, [point.bankroll for point in points])],
        element_id="book-bankroll",
        title=f"Bankroll after each settled bet, from {starting_bankroll:,.2f}",
        x_labels=("bet 1", f"bet {len(points)}"),
        y_format="{:,.2f}",
    )


def clv_bars(points: Sequence[BetClv]) -> Markup:
    """Each settled bet's CLV as a bar from zero (above: the bet beat the close), in the
    order of their matches' kickoffs, with the running mean CLV as a line over them."""
    values = np.asarray([point.clv for point in points], dtype=np.float64)
    running = np.cumsum(values) / np.arange(1, len(values) + 1)
    low, high = min(float(values.min()), 0.0), max(float(values.max()), 0.0)
    if high - low <= 0:
        low, high = -0.01, 0.01
    slot = (WIDTH - LEFT - RIGHT) / len(values)
    zero = float(_scale(np.asarray([0.0]), low, high, HEIGHT - BOTTOM, TOP)[0])
    tops = _scale(values, low, high, HEIGHT - BOTTOM, TOP)
    bars = "".join(
        f'<rect class="clv {"above" if value >= 0 else "below"}"'
        f' x="{_number(LEFT + i * slot + slot * 0.1)}" y="{_number(min(top, zero))}"'
        f' width="{_number(max(slot * 0.8, 0.5))}" height="{_number(max(abs(zero - top), 0.5))}">'
        f"<title>bet {point.bet_id}: CLV {value:+.1%}</title></rect>"
        for i, (point, value, top) in enumerate(
            zip(points, values.tolist(), tops.tolist(), strict=True)
        )
    )
    centres = [LEFT + (i + 0.5) * slot for i in range(len(values))]
    mean_line = _path("s1", centres, _scale(running, low, high, HEIGHT - BOTTOM, TOP).tolist())
    mean_line = mean_line.replace("<path ", '<path id="clv-running-mean" ', 1)
    axes = (
        f'<line class="axis" x1="{LEFT}" y1="{_number(zero)}" x2="{WIDTH - RIGHT}"'
        f' y2="{_number(zero)}"/>'
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}"/>'
        f'<text class="tick" x="{LEFT - 4}" y="{TOP + 4}" text-anchor="end">{high:+.1%}</text>'
        f'<text class="tick" x="{LEFT - 4}" y="{HEIGHT - BOTTOM}" text-anchor="end">'
        f"{low:+.1%}</text>"
        f'<text class="tick" x="{LEFT}" y="{HEIGHT - 8}">bet 1</text>'
        f'<text class="tick" x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" text-anchor="end">'
        f"bet {len(values)}</text>"
    )
    bets = counted(len(values), "settled bet")
    title = f"CLV of each of {bets} with a close, in the order of their kickoffs"
    legend = [("clv", "CLV of a bet"), ("s1", "mean CLV so far")]
    return _figure(_svg("clv-bars", title, WIDTH, HEIGHT, axes + bars + mean_line), legend)
