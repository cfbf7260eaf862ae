"""Without the ``dashboard`` extra the server still serves, and /dashboard/ says what to install."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from django.test import Client

from dashboard import views


@pytest.fixture
def without_dash(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Dash cannot be imported in this process, as when the extra is not installed."""
    monkeypatch.setitem(sys.modules, "dash", None)  # `import dash` now raises ModuleNotFoundError
    views.missing_extra.cache_clear()
    yield
    views.missing_extra.cache_clear()


def test_every_dashboard_page_answers_503_with_what_to_install(without_dash: None) -> None:
    client = Client()
    for path in ("/dashboard/", "/dashboard/history", "/dashboard/_dash-layout"):
        response = client.get(path)
        assert response.status_code == 503, path
        assert "pip install 'dash&lt;5,&gt;=3' 'plotly&lt;7,&gt;=5.24'" in response.content.decode(), path
        assert "<code>dash</code> is missing" in response.content.decode(), path


def test_the_extra_is_named_by_its_requirements_not_by_an_unheld_name() -> None:
    """``footfall[dashboard]`` would fetch whatever PyPI holds under ``footfall``; the page names
    the extra's own requirements, as the installed distribution lists them."""
    assert views.extra_requirements("dashboard") == ["dash<5,>=3", "plotly<7,>=5.24"]
    assert views.extra_requirements("spark") == ["pyspark<5,>=4.0"]
    assert views.extra_requirements("no-such-extra") == []


def test_with_the_extra_nothing_is_missing() -> None:
    views.missing_extra.cache_clear()
    assert views.missing_extra() is None
