"""A CSV answer with no rows still has its header: an empty body would be a 200 with no
Content-Type (DRF drops it for an empty render), which no client can read as CSV."""

from __future__ import annotations

import pytest

from query.export import to_csv


@pytest.mark.parametrize(
    ("answer", "header"),
    [
        ({"metric": "pageviews", "points": []}, "t,pageviews,source"),
        ({"metrics": ["pageviews", "visitors"], "results": []}, "value,pageviews,visitors"),
        ({"event": "signup", "property": "plan", "results": []}, "value,events,visitors"),
    ],
)
def test_an_empty_answer_is_its_header(answer: dict, header: str) -> None:
    assert to_csv(answer) == header + "\n"
