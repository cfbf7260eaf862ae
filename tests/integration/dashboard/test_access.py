"""Who gets through to the Dash app: Django's login, per-site grants, CSRF on callbacks."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client

from dashboard.live import OUTPUTS
from dashboard.models import ShareLink, SiteAccess
from footfall.models import Site

PASSWORD = "correct horse battery staple 42"


@pytest.fixture
def site(db: None) -> Site:
    return Site.objects.create(site_id="access-test", name="Access", domains=["a.example"], timezone="Europe/Berlin")


def live_callback(site_id: str) -> dict:
    """The body Dash's renderer posts for the live view's refresh."""
    outputs = [{"id": o.component_id, "property": o.component_property} for o in OUTPUTS]
    return {
        "output": ".." + "...".join(f"{o['id']}.{o['property']}" for o in outputs) + "..",
        "outputs": outputs,
        "inputs": [
            {"id": "live-tick", "property": "n_intervals", "value": 1},
            {"id": "site", "property": "value", "value": site_id},
            {"id": "live-minutes", "property": "value", "value": 30},
        ],
        "changedPropIds": ["live-tick.n_intervals"],
        "state": [],
    }


def post_callback(client: Client, body: dict, **headers: str):
    return client.post(
        "/dashboard/_dash-update-component", json.dumps(body), content_type="application/json", **headers
    )


def user(name: str, *sites: Site, staff: bool = False):
    account = get_user_model().objects.create_user(name, password=PASSWORD, is_staff=staff)
    for s in sites:
        SiteAccess.objects.create(user=account, site=s)
    return account


def test_anonymous_requests_are_sent_to_the_login(site: Site) -> None:
    """Pages redirect to the login form; Dash's own routes answer 403."""
    client = Client()
    response = client.get("/dashboard/history?site=access-test")
    assert response.status_code == 302
    assert response["Location"] == "/dashboard/login/?next=/dashboard/history%3Fsite%3Daccess-test"
    assert client.get("/dashboard/_dash-layout").status_code == 403
    assert post_callback(client, live_callback(site.site_id)).status_code == 403
    assert client.get("/").headers["Location"] == "/dashboard/"


def test_callbacks_answer_only_for_granted_sites(site: Site) -> None:
    """A signed-in user without a grant gets no numbers for a site, even by forging the callback."""
    user("mallory")
    client = Client()
    client.login(username="mallory", password=PASSWORD)
    response = post_callback(client, live_callback(site.site_id))
    assert response.status_code == 200
    body = response.json()["response"]
    assert body["live-error"] == {"children": "Choose a site you have access to.", "hidden": False}
    assert body["live-pageviews"]["children"] == "—"
    layout = client.get("/dashboard/_dash-layout").content.decode()
    assert "access-test" not in layout


def test_grants_and_staff_see_their_sites(site: Site) -> None:
    """A granted user's picker lists the site; staff see every site; the live callback answers with numbers."""
    other = Site.objects.create(site_id="other-site", name="Other", domains=["o.example"])
    user("carol", site)
    user("root", staff=True)
    client = Client()
    client.login(username="carol", password=PASSWORD)
    layout = client.get("/dashboard/_dash-layout").content.decode()
    assert "access-test" in layout
    assert "other-site" not in layout
    body = post_callback(client, live_callback(site.site_id)).json()["response"]
    assert body["live-error"]["hidden"] is True
    assert body["live-pageviews"]["children"].replace(",", "").isdigit()
    client.login(username="root", password=PASSWORD)
    layout = client.get("/dashboard/_dash-layout").content.decode()
    assert "access-test" in layout
    assert other.site_id in layout


def test_callbacks_need_the_csrf_token(site: Site) -> None:
    """Callbacks are POSTs under Django's CSRF check: without the cookie's token in X-CSRFToken, 403."""
    user("dave", site)
    client = Client(enforce_csrf_checks=True)
    client.login(username="dave", password=PASSWORD)
    page = client.get("/dashboard/")
    assert page.status_code == 200
    assert "script-src 'self' 'sha256-" in page["Content-Security-Policy"]
    token = client.cookies["csrftoken"].value
    assert post_callback(client, live_callback(site.site_id)).status_code == 403
    assert post_callback(client, live_callback(site.site_id), HTTP_X_CSRFTOKEN=token).status_code == 200


def test_share_link_tokens_are_hashed_and_revocable(site: Site) -> None:
    """Only a hash is stored; a revoked or wrong token opens nothing."""
    link, token = ShareLink.issue(site, "press")
    assert token not in {link.token_hash, link.prefix}
    assert link.token_hash != token
    assert ShareLink.resolve(token) == link
    assert ShareLink.resolve(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    client = Client()
    assert client.get(f"/dashboard/share/{token}").headers["Location"] == "/dashboard/?site=access-test"
    assert client.get("/dashboard/_dash-layout").status_code == 200
    link.revoke()
    assert ShareLink.resolve(token) is None
    assert client.get(f"/dashboard/share/{token}").status_code == 404
    layout = client.get("/dashboard/_dash-layout").content.decode()
    assert "access-test" not in layout  # the page shows the "link was revoked" notice instead


def test_dashboard_user_command_keeps_its_password_file_private(site: Site, tmp_path) -> None:
    """up.sh's demo login: a generated password stored mode 600, reused on the next run, the site granted."""
    secret = tmp_path / "state" / "login"
    out = StringIO()
    call_command("dashboard_user", "demo", site=[site.site_id], password_file=str(secret), stdout=out)
    assert "created demo (sites: access-test)" in out.getvalue()
    password = secret.read_text().strip()
    assert len(password) >= 16
    assert secret.stat().st_mode & 0o777 == 0o600
    call_command("dashboard_user", "demo", site=[site.site_id], password_file=str(secret), stdout=StringIO())
    assert secret.read_text().strip() == password, "a second run keeps the login"
    assert Client().login(username="demo", password=password)
    with pytest.raises(CommandError, match="no site nope"):
        call_command("dashboard_user", "demo", site=["nope"], stdout=StringIO())


def test_share_link_command_issues_lists_and_revokes(site: Site) -> None:
    out = StringIO()
    call_command("share_link", site.site_id, label="press", base_url="https://stats.example/", stdout=out)
    url = out.getvalue().strip()
    assert url.startswith("https://stats.example/dashboard/share/fs_")
    token = url.rsplit("/", 1)[1]
    link = ShareLink.resolve(token)
    assert link is not None
    assert link.label == "press"
    listing = StringIO()
    call_command("share_link", site.site_id, list=True, stdout=listing)
    assert f"{link.prefix}…, live" in listing.getvalue()
    call_command("share_link", site.site_id, revoke=link.prefix, stdout=StringIO())
    assert ShareLink.resolve(token) is None
    with pytest.raises(CommandError, match="no live share link"):
        call_command("share_link", site.site_id, revoke=link.prefix, stdout=StringIO())


@pytest.mark.parametrize("body", [b"not json", b"[]", b'{"inputs": []}', b'{"output": "x", "inputs": "y"}'])
def test_a_malformed_callback_is_a_400_not_an_error_in_the_log(
    site: Site, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    client = Client()
    client.force_login(user("mallory", site))
    response = client.post("/dashboard/_dash-update-component", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"error": "a malformed callback request"}
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
