"""Tokens in URLs are cut out of log lines; the rest of the line stays."""

from __future__ import annotations

import pytest

from footfall.redact import redact

API = "/api/v1/sites/s/timeseries"


@pytest.mark.parametrize(
    ("line", "logged"),
    [
        ('"GET /dashboard/share/fs_AbC123-x HTTP/1.1" 200', '"GET /dashboard/share/[redacted] HTTP/1.1" 200'),
        ("POST /alerts/unsubscribe/eyJ0.sig?one=1", "POST /alerts/unsubscribe/[redacted]?one=1"),
        (f"{API}?token=abc&from=2026-01-01", f"{API}?token=[redacted]&from=2026-01-01"),
        ("https://stats.example.com/dashboard/share/fs_x/", "https://stats.example.com/dashboard/share/[redacted]/"),
        (f'"GET {API}?from=2026-01-01 HTTP/1.1" 200', f'"GET {API}?from=2026-01-01 HTTP/1.1" 200'),
    ],
)
def test_tokens_are_cut_out(line: str, logged: str) -> None:
    assert redact(line) == logged
