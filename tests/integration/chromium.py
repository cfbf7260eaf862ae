"""Debian's Chromium, driven by Playwright, for the browser tests (tracker and dashboard)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright
from playwright.sync_api import Error as PlaywrightError

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


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium; the test fails (not skips) with what to do when it is missing.

    Playwright's sync API runs an event loop in the calling thread, and Django refuses ORM
    calls from such a thread: do the test's ORM work before entering this."""
    if not CHROMIUM.is_file():
        pytest.fail(
            f"{CHROMIUM} not found: the browser tests need Debian's chromium package. Install it with "
            "`python -m deploy.local.stack start chromium` (deploy/local/test.sh does it) "
            "or `apt-get install chromium`",
            pytrace=False,
        )
    with sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        except PlaywrightError as exc:
            pytest.fail(f"could not launch {CHROMIUM} with Playwright: {exc}", pytrace=False)
        try:
            yield browser
        finally:
            browser.close()
