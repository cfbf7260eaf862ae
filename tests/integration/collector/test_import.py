"""``manage.py import_events`` backfills an access log through the live pipeline, idempotently."""
# ruff: noqa: E501 - verbatim access-log lines

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from footfall.models import Site
from footfall_capture.events import decode
from tests.integration.kafka_tail import TopicTail

LOG = """\
203.0.113.9 - - [20/Nov/2026:08:00:00 +0000] "GET / HTTP/1.1" 200 512 "-" "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
203.0.113.9 - - [20/Nov/2026:08:00:01 +0000] "GET /static/site.css HTTP/1.1" 200 99 "https://example.com/" "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
198.51.100.4 - - [20/Nov/2026:09:30:00 +0000] "GET /pricing HTTP/1.1" 200 800 "https://duckduckgo.com/" "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1"
66.249.66.1 - - [20/Nov/2026:10:00:00 +0000] "GET /pricing HTTP/1.1" 200 800 "-" "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
this is not a log line
"""


def test_access_log_import_is_idempotent(site: Site, events_tail: TopicTail, tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_text(LOG)
    with pytest.raises(CommandError, match="not imported"):  # the bad line is reported, the rest imported
        call_command("import_events", str(log), site=site.site_id, format="combined", no_progress=True)
    with pytest.raises(CommandError):
        call_command("import_events", str(log), site=site.site_id, format="combined", no_progress=True)
    msgs = events_tail.read(lambda m: decode(m.value()).site_id == site.site_id, 6, settle=1.0)
    events = [decode(m.value()) for m in msgs]
    assert len(events) == 6  # 3 page views (the bot flagged, not dropped), imported twice
    assert len({e.event_id for e in events}) == 3  # the second import repeats the same ids
    first = min(events, key=lambda e: e.ts)
    assert (first.path, first.ts) == ("/", 1_795_161_600_000)
    assert sorted({(e.path, e.ua.is_bot) for e in events}) == [("/", False), ("/pricing", False), ("/pricing", True)]
    assert not [m for m in msgs for ip in (b"203.0.113.9", b"198.51.100.4", b"66.249.66.1") if ip in m.value()]


def test_unknown_site_is_a_clear_error(db: None, tmp_path: Path) -> None:
    (tmp_path / "x.log").write_text(LOG)
    with pytest.raises(CommandError, match="no site"):
        call_command("import_events", str(tmp_path / "x.log"), site="nope", format="combined")


def test_import_with_a_base_url_off_the_sites_domains(site: Site, events_tail: TopicTail, tmp_path: Path) -> None:
    """The operator's import is not held to the site's domain list (e.g. logs of an old host name)."""
    log = tmp_path / "access.log"
    log.write_text(LOG.splitlines()[0] + "\n")
    call_command("import_events", str(log), site=site.site_id, format="combined", base_url="https://old-host.test",
                 no_progress=True)  # fmt: skip
    [msg] = events_tail.read(lambda m: decode(m.value()).site_id == site.site_id, 1, settle=1.0)
    assert decode(msg.value()).host == "old-host.test"
