from __future__ import annotations

import datetime as dt
import io
from zoneinfo import ZoneInfo

import pytest
from PIL import Image

from alerts.charts import DPI, HEIGHT_IN, WIDTH_IN, series_png


def test_a_series_becomes_a_png_of_the_mail_size_deterministically() -> None:
    start = dt.datetime(2026, 11, 23, tzinfo=ZoneInfo("Europe/Berlin"))
    points = [(start + dt.timedelta(hours=h), float(h % 7 * 10)) for h in range(48)]
    png = series_png(points, title="Visitors, last 48 h", highlight_from=start + dt.timedelta(hours=45))
    image = Image.open(io.BytesIO(png))
    assert (image.format, image.size) == ("PNG", (int(WIDTH_IN * DPI), int(HEIGHT_IN * DPI)))
    assert series_png(points, title="Visitors, last 48 h", highlight_from=start + dt.timedelta(hours=45)) == png
    assert series_png(points, title="Visitors, last 48 h") != png  # the shaded window shows


def test_flat_zero_and_single_point_series_draw_and_no_points_is_an_error() -> None:
    t = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)
    assert series_png([(t, 0.0), (t + dt.timedelta(hours=1), 0.0)], title="quiet").startswith(b"\x89PNG")
    assert series_png([(t, 5.0)], title="one").startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="at least one point"):
        series_png([], title="none")
