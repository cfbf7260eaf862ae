"""Imported history through the API and the dashboard, on the real Mongo-wire server.

A Plausible-format export (:mod:`tests.plausible_zip`, a known truth) of 1 and 2 March 2025 is
imported with ``manage.py imports add`` into a site that settled 2 March itself (its own
rollup documents, as the nightly job loads them). The answers then hold the import's visitors,
page views, sources, pages and locations exactly on its days, name them in
``sources.imported``, keep the site's own 2 March (the default) until the site prefers its
imports, and give null engaged time there. Deleting the import through the API removes exactly
its figures.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.test import Client

from dashboard.models import SiteAccess
from footfall.config import Config
from footfall.models import ApiKey, Site
from historical.imported import IMPORTED_BREAKDOWNS, IMPORTED_DAILY, IMPORTS
from historical.plausible_export import read_export
from historical.store import BREAKDOWNS, DAILY, RUNS, DayDocuments, connect, load_day
from tests.integration.dash_callbacks import post_callback
from tests.plausible_zip import D1, D2, TABLES, write_export

pytestmark = pytest.mark.django_db(transaction=True)

OWN = {"pageviews": 7, "visitors": 3, "sessions": 4, "bounces": 1, "visit_duration_s": 10.0}
OWN_PAGES = [
    {"dimension": "page", "value": "/own", "ref": None, "page": None, "pageviews": 7, "visitors": 3,
     "engaged_ms": 5000, "engagements": 2},
]  # fmt: skip


class Api:
    def __init__(self, site: str, key: str) -> None:
        self.site, self.key, self.client = site, key, Client()

    def get(self, path: str, **params: object) -> dict:
        response = self.client.get(f"/api/v1/sites/{self.site}/{path}", params, HTTP_AUTHORIZATION=f"Bearer {self.key}")
        assert response.status_code == 200, response.content[:400]
        return response.json()

    def delete(self, path: str) -> int:
        return self.client.delete(
            f"/api/v1/sites/{self.site}/{path}", HTTP_AUTHORIZATION=f"Bearer {self.key}"
        ).status_code

    def days(self, metric: str, first: str = "2025-03-01", last: str = "2025-03-04") -> list[tuple[str, object]]:
        body = self.get("timeseries", metric=metric, interval="day", **{"from": first, "to": last})
        return [(p["source"], p["value"]) for p in body["points"]]

    def rows(self, dimension: str, day: str, metrics: str = "pageviews,visitors") -> dict[str, dict]:
        after = (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()
        body = self.get(f"breakdown/{dimension}", metrics=metrics, limit=100, **{"from": day, "to": after})
        return {row.pop("value"): row for row in body["results"]}


@pytest.fixture
def site(cfg: Config, tmp_path: Path) -> Iterator[tuple[Site, Api, Path]]:
    site = Site.objects.create(site_id=f"imp-{uuid.uuid4().hex[:8]}", name="imp", domains=["example.com"])
    _, key = ApiKey.issue(site, "analyst", ["read", "manage"])
    client, db = connect(cfg.mongo_url, cfg.mongo_db)
    load_day(db, DayDocuments(site.site_id, D2.isoformat(), OWN, [], OWN_PAGES, {"status": "complete", "tz": "UTC"}))
    yield site, Api(site.site_id, key), write_export(tmp_path / "plausible.zip", TABLES, D1, D2)
    for name in (IMPORTS, IMPORTED_DAILY, IMPORTED_BREAKDOWNS, DAILY, BREAKDOWNS, RUNS):
        db[name].delete_many({"site_id": site.site_id})
    client.close()


def imported_rows(table: str, column: str, day: str) -> dict[str, dict[str, int]]:
    """The truth: the export's rows of ``table`` on ``day``, summed per value of ``column``."""
    out: dict[str, dict[str, int]] = {}
    for row in TABLES[table]:
        if row["date"] == day:
            value = str(row.get(column) or "")
            into = out.setdefault(value, {"pageviews": 0, "visitors": 0})
            into["pageviews"] += int(row.get("pageviews") or 0)  # type: ignore[call-overload]
            into["visitors"] += int(row["visitors"])  # type: ignore[call-overload]
    return out


def test_an_import_answers_its_days_beside_the_sites_own_and_its_delete_removes_exactly_that(
    site: tuple[Site, Api, Path],
) -> None:
    record, api, path = site
    before = {metric: api.days(metric) for metric in ("pageviews", "visitors")}
    assert before["pageviews"] == [("missing", None), ("batch", 7), ("missing", None)]

    out = io.StringIO()
    call_command("imports", "add", "--site", record.site_id, str(path), stdout=out)
    import_id = re.match(r"imported (\w+) into ", out.getvalue())[1]  # type: ignore[index]
    truth = {day.isoformat(): figures.totals for day, figures in read_export(path).days.items()}

    # Per day: 1 March from the import, 2 March the site's own (the default), 3 March nothing.
    assert api.days("pageviews") == [("imported", truth["2025-03-01"]["pageviews"]), ("batch", 7), ("missing", None)]
    assert api.days("visitors") == [("imported", truth["2025-03-01"]["visitors"]), ("batch", 3), ("missing", None)]
    body = api.get("timeseries", metric="pageviews", interval="day", **{"from": "2025-03-01", "to": "2025-03-04"})
    assert (body["sources"]["imported"]["days"], body["sources"]["imported"]["imports"]) == (
        ["2025-03-01"],
        [import_id],
    )
    assert body["sources"]["batch"]["days"] == ["2025-03-02"]
    hours = api.get("timeseries", metric="pageviews", interval="hour", **{"from": "2025-03-01", "to": "2025-03-02"})
    assert {(p["source"], p["value"]) for p in hours["points"]} == {("imported", None)}

    # Sources, pages and locations of the imported day, exactly.
    day = "2025-03-01"
    pages = imported_rows("pages", "page", day)
    assert api.rows("pages", day) == pages
    assert api.rows("referrers", day) == {
        "(direct)": {"pageviews": 45, "visitors": 20}, "Google": {"pageviews": 35, "visitors": 15},
        "Newsletter": {"pageviews": 10, "visitors": 5},
    }  # fmt: skip
    assert api.rows("utm_campaigns", day) == {"spring": {"pageviews": 10, "visitors": 5}}
    assert api.rows("countries", day) == {
        "DE": {"pageviews": 65, "visitors": 30},
        "FR": {"pageviews": 25, "visitors": 10},
    }
    # Engaged time: none in an import, null (not 0) on its days; the site's own day keeps its own.
    engaged = api.rows("pages", day, "pageviews,time_on_page,engaged_time")
    assert {(row["time_on_page"], row["engaged_time"]) for row in engaged.values()} == {(None, None)}
    assert api.rows("pages", "2025-03-02", "engaged_time") == {"/own": {"engaged_time": 5.0}}

    # The site prefers its imports: 2 March answers from the import too.
    record.imports_win = True
    record.save()  # as the admin or create_site --imports-win saves it
    assert api.days("pageviews")[:2] == [
        ("imported", truth["2025-03-01"]["pageviews"]), ("imported", truth["2025-03-02"]["pageviews"])
    ]  # fmt: skip
    assert api.rows("pages", "2025-03-02") == imported_rows("pages", "page", "2025-03-02")

    # The dashboard's history chart marks the imported days and its notes name the import.
    account = get_user_model().objects.create_user(f"u-{uuid.uuid4().hex[:6]}")
    SiteAccess.objects.create(user=account, site=record)
    browser = Client()
    browser.force_login(account)
    store = {"site": record.site_id, "first": "2025-03-01", "last": "2025-03-03", "compare": False, "notes": []}
    shown = post_callback(browser, [("hist-series", "figure"), ("hist-notes", "children")],
                          [("hist-range", "data", store), ("hist-metric", "value", "pageviews"),
                           ("hist-filter", "data", None)])  # fmt: skip
    trace = shown["hist-series"]["figure"]["data"][-1]
    assert trace["y"][:2] == [truth["2025-03-01"]["pageviews"], truth["2025-03-02"]["pageviews"]]
    assert [label.endswith("(imported)") for label in trace["customdata"]] == [True, True, False]
    notes = [item["props"]["children"] for item in shown["hist-notes"]["children"]]
    assert any(f"import {import_id}" in note and "2025-03-01 to 2025-03-02" in note for note in notes)

    listed = api.get("imports")["results"]
    assert [(one["import_id"], one["first"], one["last"], one["state"]) for one in listed] == [
        (import_id, "2025-03-01", "2025-03-02", "complete")
    ]
    assert api.delete("imports/unknown") == 404
    assert api.delete(f"imports/{import_id}") == 204
    assert api.get("imports")["results"] == []
    record.imports_win = False
    record.save()
    assert {metric: api.days(metric) for metric in ("pageviews", "visitors")} == before
    assert api.rows("pages", "2025-03-02") == {"/own": {"pageviews": 7, "visitors": 3}}


def test_a_read_only_key_lists_imports_and_cannot_delete_one(site: tuple[Site, Api, Path]) -> None:
    record, _, path = site
    call_command("imports", "add", "--site", record.site_id, str(path), stdout=io.StringIO())
    _, key = ApiKey.issue(record, "reader", ["read"])
    reader = Api(record.site_id, key)
    (one,) = reader.get("imports")["results"]
    assert reader.delete(f"imports/{one['import_id']}") == 403
    assert len(reader.get("imports")["results"]) == 1


def test_the_admin_lists_imports_and_deletes_one_after_asking(site: tuple[Site, Api, Path]) -> None:
    record, api, path = site
    call_command("imports", "add", "--site", record.site_id, str(path), stdout=io.StringIO())
    (one,) = api.get("imports")["results"]
    staff = get_user_model().objects.create_user(f"s-{uuid.uuid4().hex[:6]}", is_staff=True)
    admin = Client()
    admin.force_login(staff)
    assert admin.get("/admin/imports/").status_code == 403  # staff without the Site model's permissions
    staff.user_permissions.add(Permission.objects.get(codename="view_site"))
    page = admin.get("/admin/imports/").content.decode()
    assert one["import_id"] in page
    assert record.site_id in page
    assert "2025-03-01 to 2025-03-02" in page
    assert "Delete</a>" not in page  # viewing only
    delete = f"/admin/imports/{one['import_id']}/delete/"
    assert admin.post(delete).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="change_site"))
    admin.force_login(get_user_model().objects.get(pk=staff.pk))  # permissions are cached on the user
    assert "Delete</a>" in admin.get("/admin/imports/").content.decode()
    assert "Yes, delete it" in admin.get(delete).content.decode()
    assert api.get("imports")["results"] == [one]  # asking deletes nothing
    assert admin.post(delete).status_code == 302
    assert api.get("imports")["results"] == []
    assert admin.get(delete).status_code == 404
