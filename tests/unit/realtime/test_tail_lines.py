"""What the live tail shows and of which events, and how it samples: pure."""

from __future__ import annotations

import json

import pytest

from footfall_capture.events import SCHEMA_VERSION, Event, UserAgent
from realtime.tail_lines import Sampler, TailFilter, invalid_row, payload_site, tail_row, text_line

VISITOR = "0123456789abcdef0123456789abcdef"


def event(type_: str = "pageview", path: str = "/blog/post", site: str = "shop", **fields: object) -> Event:
    return Event(event_id="01890a5d-ac96-774b-bcce-b302099a8057", site_id=site, type=type_, ts=1_763_700_000_123,
                 received_at=1_763_700_000_200, schema=SCHEMA_VERSION, url=f"https://shop.example{path}",
                 host="shop.example", path=path, visitor_id=VISITOR, **fields)  # fmt: skip


@pytest.mark.parametrize(
    ("wanted", "shown"),
    [
        (TailFilter("shop"), True),
        (TailFilter("other"), False),
        (TailFilter("shop", "pageview"), True),
        (TailFilter("shop", "signup"), False),
        (TailFilter("shop", path="/blog/*"), True),
        (TailFilter("shop", path="/blog"), False),
        (TailFilter("shop", path="*post"), True),
        (TailFilter(None), True),
    ],
)
def test_the_filter(wanted: TailFilter, shown: bool) -> None:
    assert wanted.matches(event()) is shown


def test_an_event_without_a_path_matches_no_path_glob() -> None:
    bare = Event(event_id="01890a5d-ac96-774b-bcce-b302099a8057", site_id="shop", type="signup", ts=1, received_at=1,
                 schema=SCHEMA_VERSION)  # fmt: skip
    assert not TailFilter("shop", path="*").matches(bare)
    assert TailFilter("shop").matches(bare)


def test_a_row_shows_the_event_and_a_short_visitor_id() -> None:
    row = tail_row(event("signup", props={"plan": "pro"}, ref_domain="news.example", ref_type="other",
                         country="GB", ua=UserAgent(browser="Firefox", device="desktop")))  # fmt: skip
    assert row == {
        "time": "2025-11-21T04:40:00.123Z", "site": "shop", "type": "signup", "path": "/blog/post",
        "host": "shop.example", "referrer": "news.example", "ref_type": "other", "country": "GB",
        "device": "desktop", "browser": "Firefox", "bot": False, "event": "signup", "props": {"plan": "pro"},
        "visitor": "01234567",
    }  # fmt: skip
    assert VISITOR not in json.dumps(row)
    line = text_line(row)
    assert (
        line == "04:40:00.123  signup  /blog/post  from news.example  GB  desktop  Firefox  plan=pro  visitor 01234567"
    )
    assert tail_row(event())["event"] is None  # a page view is no custom event


def test_a_refused_event_shows_its_reason() -> None:
    payload = b'{"site_id": "shop", "type": "pageview", "url": "javascript:alert(1)"}'
    row = invalid_row(payload, {"reason": "invalid_field", "detail": "a pageview needs a url", "source": "collector"},
                      1_763_700_000_123, payload_site(payload))  # fmt: skip
    assert (row["site"], row["reason"], row["refused_by"]) == ("shop", "invalid_field", "collector")
    assert "refused: invalid_field (a pageview needs a url)" in text_line(row)
    assert payload_site(b"not json") is None
    assert payload_site(b"[1]") is None


def test_sampling_cuts_a_burst_then_shows_one_in_n_and_says_so() -> None:
    sampler = Sampler(max_per_s=10)
    first = [sampler.take(100.0 + i / 1000) for i in range(50)]  # 50 in one second
    assert sum(show for show, _ in first) == 10  # cut at once
    assert all(note is None for _, note in first)
    second = [sampler.take(101.0 + i / 1000) for i in range(50)]
    assert second[0][1] == "showing 1 in 5"
    assert sum(show for show, _ in second) == 10
    calm = [sampler.take(103.0 + i / 10) for i in range(3)]  # a second with nothing before it
    assert calm[0][1] == "showing every event"
    assert all(show for show, _ in calm)
