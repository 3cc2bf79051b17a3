"""The dashboard in a real browser: Debian's chromium, driven by Playwright (the fixture
``browser``, one per module), and what every page must pass there: no console error (a blocked
inline style or script is one: the Content-Security-Policy reports it there), no failed
request, no dialog (:class:`Watched`), and nothing past the screen's sides outside a table's
scrolling frame, on the desktop and on phones (:func:`fits`). Screenshots go to the test's
directory, and also to ODDSBOOST_SCREENSHOT_DIR when that is set.

Chromium is found at ODDSBOOST_CHROMIUM (default /usr/bin/chromium); without it these tests
fail: `.ci/run` installs it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Dialog,
    Page,
    Response,
    ViewportSize,
    sync_playwright,
)
from playwright.sync_api import Request as BrowserRequest

CHROMIUM = Path(os.environ.get("ODDSBOOST_CHROMIUM", "/usr/bin/chromium"))
VIEWPORT = ViewportSize(width=1280, height=900)
# A common phone, and the narrowest one still sold (the first iPhone SE's 320 CSS pixels).
PHONES = (ViewportSize(width=375, height=800), ViewportSize(width=320, height=800))
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
# Every element that reaches past the viewport's sides, but inside a wrapper that scrolls
# sideways on purpose (overflow-x: auto); and the document's own width against the
# viewport's. Run by the test through the browser's debugging protocol, not by the page,
# whose policy allows no script.
OVERFLOW_CHECK = """() => {
  const width = window.innerWidth;
  const scrolls = (element) => {
    const wrapper = element.parentElement && element.parentElement.closest(".scroll");
    return wrapper !== null && getComputedStyle(wrapper).overflowX === "auto";
  };
  const wide = [];
  for (const element of document.body.querySelectorAll("*")) {
    if (scrolls(element)) continue;
    const box = element.getBoundingClientRect();
    if (box.width > 0 && (box.right > width + 0.5 || box.left < -0.5)) {
      const kind = element.className.baseVal ?? element.className;
      const named = element.id ? "#" + element.id : kind;
      const tag = element.tagName.toLowerCase();
      wide.push(`${tag} ${named}: ${box.left}..${box.right}`);
    }
  }
  return {scrollWidth: document.documentElement.scrollWidth, innerWidth: width, wide: wide};
}"""


def chromium_path() -> Path:
    if not CHROMIUM.is_file():
        pytest.fail(
            f"chromium not found at {CHROMIUM}: install it (apt-get install -y chromium) "
            "or set ODDSBOOST_CHROMIUM",
            pytrace=False,
        )
    return CHROMIUM


@dataclass
class Watched:
    """What a page did wrong while it loaded: console errors, failed requests, dialogs."""

    errors: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def attach(self, page: Page) -> None:
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))
        page.on("requestfailed", self._request_failed)
        page.on("response", self._response)
        page.on("dialog", self._dialog)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"{message.text} ({message.location.get('url')})")

    def _request_failed(self, request: BrowserRequest) -> None:
        self.failed.append(f"{request.url}: {request.failure}")

    def _response(self, response: Response) -> None:
        if response.status >= 400:
            self.failed.append(f"{response.url}: {response.status}")

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def assert_clean(self) -> None:
        assert (self.errors, self.failed, self.dialogs) == ([], [], [])


def screenshot(page: Page, directory: Path, name: str) -> None:
    page.screenshot(path=directory / f"{name}.png", full_page=True)
    wanted = os.environ.get("ODDSBOOST_SCREENSHOT_DIR")
    if wanted:
        Path(wanted).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=Path(wanted) / f"{name}.png", full_page=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium_path()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(executable))
        yield browser
        browser.close()


def fits(page: Page) -> None:
    """Nothing reaches past the viewport's sides but inside a wrapper that scrolls; and no
    two elements share an id (a link to a fragment or a test would find the wrong one)."""
    found = page.evaluate(OVERFLOW_CHECK)
    assert found["wide"] == [], found
    assert found["scrollWidth"] <= found["innerWidth"], found
    ids = page.evaluate("() => [...document.querySelectorAll('[id]')].map((e) => e.id)")
    assert sorted({i for i in ids if ids.count(i) > 1}) == [], page.url
