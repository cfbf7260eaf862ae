"""Debian's Chromium, driven by Playwright, for the browser tests (tracker and dashboard)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest
from playwright.sync_api import Browser, Playwright, sync_playwright
from playwright.sync_api import Error as PlaywrightError

T = TypeVar("T")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # No internet here: without these Chromium floods the log with refused connections.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _require_chromium() -> None:
    if not CHROMIUM.is_file():
        pytest.fail(
            f"{CHROMIUM} not found: the browser tests need Debian's chromium package. Install it with "
            "`python -m deploy.local.stack start chromium` (deploy/local/test.sh does it) "
            "or `apt-get install chromium`",
            pytrace=False,
        )


def _launch(pw: Playwright) -> Browser:
    try:
        return pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
    except PlaywrightError as exc:
        pytest.fail(f"could not launch {CHROMIUM} with Playwright: {exc}", pytrace=False)


class BrowserThread:
    """One Chromium for a whole test run, driven from a thread of its own.

    Playwright's sync API must be called from the thread that started it, and the event loop
    it runs there makes Django refuse ORM calls: the tests using this browser run their body in
    that thread (:func:`run`, from tests/integration/conftest.py) and reach the ORM through a
    helper thread, as they did with a browser of their own."""

    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="chromium")
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None

    def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` in the browser's thread; its exception is raised here."""
        return self._thread.submit(fn).result()

    def browser(self) -> Browser:
        """The run's Chromium, launched on first use (again if it went away)."""
        return self.run(self._connected)

    def _connected(self) -> Browser:
        if self._browser is None or not self._browser.is_connected():
            _require_chromium()
            if self._playwright is None:
                self._playwright = sync_playwright().start()
            self._browser = _launch(self._playwright)
        return self._browser

    def close_contexts(self) -> None:
        """Close what a test opened: the next test starts from fresh contexts (no cookies, storage or pages)."""

        def close() -> None:
            for context in self._browser.contexts if self._browser else []:
                context.close()

        self.run(close)

    def close(self) -> None:
        def stop() -> None:
            if self._browser is not None:
                self._browser.close()
            if self._playwright is not None:
                self._playwright.stop()

        self.run(stop)
        self._thread.shutdown()


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium of its own (most tests share the run's: ``shared_browser``); the
    test fails (not skips) with what to do when it is missing.

    Playwright's sync API runs an event loop in the calling thread, and Django refuses ORM
    calls from such a thread: do the test's ORM work before entering this."""
    _require_chromium()
    with sync_playwright() as pw:
        browser = _launch(pw)
        try:
            yield browser
        finally:
            browser.close()
