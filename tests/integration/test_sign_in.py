"""Passwords: sign-ins are throttled per (account, address), per address and per account, without
locking anybody out; the API never takes one."""

from __future__ import annotations

import base64
import dataclasses
import uuid
from collections.abc import Iterator
from unittest import mock

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.authentication import BasicAuthentication, SessionAuthentication

from footfall.config import footfall_config
from footfall.login_throttle import ACCOUNT_FAILURES_PER_MINUTE, ADDRESS_FAILURES_PER_MINUTE, PAIR_FAILURES_PER_MINUTE
from tests.integration.api.conftest import make_site

PASSWORD = "correct horse battery staple 42"


@pytest.fixture
def checked() -> Iterator[list[str]]:
    """The user names whose password was checked (hashed and compared), in order."""
    names: list[str] = []
    original = AbstractBaseUser.check_password

    def spy(user: AbstractBaseUser, raw: str) -> bool:
        names.append(user.get_username())
        return original(user, raw)

    with mock.patch.object(AbstractBaseUser, "check_password", spy):
        yield names


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def new_client_network() -> str:
    """A /64 of documentation addresses no earlier run used (failures stay counted for a minute)."""
    h = uuid.uuid4().hex
    return f"2001:db8:{h[:4]}:{h[4:8]}::"


def sign_in(client: Client, username: str, password: str, address: str):
    return client.post("/dashboard/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


@pytest.mark.django_db
def test_sixth_bad_password_from_an_address_is_refused_without_checking_it(checked: list[str]) -> None:
    """Five wrong passwords for one account from one address; the sixth attempt from there, even
    the right one, is not checked. The same address's /64 is the same client."""
    name = unique("ann")
    get_user_model().objects.create_user(name, password=PASSWORD)
    network = new_client_network()
    client = Client()
    for n in range(PAIR_FAILURES_PER_MINUTE):
        response = sign_in(client, name, f"guess {n}", network + "1")
        assert response.status_code == 200
        assert b"do not match an active account" in response.content
    assert checked == [name] * PAIR_FAILURES_PER_MINUTE

    refused = sign_in(client, name, PASSWORD, network + "2")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert b"Too many failed sign-ins" in refused.content
    assert len(checked) == PAIR_FAILURES_PER_MINUTE, "the refused attempt's password was checked"
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_wrong_passwords_from_one_address_leave_the_right_one_from_another_working(checked: list[str]) -> None:
    """Anyone may fail on purpose for an account: its owner, elsewhere, still signs in."""
    name = unique("admin")
    get_user_model().objects.create_user(name, password=PASSWORD)
    attacker, owner = new_client_network() + "1", new_client_network() + "1"
    for n in range(PAIR_FAILURES_PER_MINUTE + 3):
        sign_in(Client(), name, f"guess {n}", attacker)
    assert sign_in(Client(), name, PASSWORD, attacker).status_code == 429
    assert sign_in(Client(), name, PASSWORD, owner).status_code == 302


@pytest.mark.django_db
def test_one_address_guessing_across_accounts_is_refused(checked: list[str]) -> None:
    """Per address too: failures on many accounts; past the address's limit the next account from
    there is not checked, and another client still signs in to it."""
    network = new_client_network()
    names = [unique("bob") for _ in range(ADDRESS_FAILURES_PER_MINUTE + 1)]
    for name in names:
        get_user_model().objects.create_user(name, password=PASSWORD)
    client = Client()
    for name in names[:-1]:
        assert sign_in(client, name, "wrong", network + "1").status_code == 200
    assert sign_in(client, names[-1], PASSWORD, network + "2").status_code == 429
    assert checked == names[:-1]
    assert sign_in(client, names[-1], PASSWORD, new_client_network() + "1").status_code == 302


@pytest.mark.django_db
def test_a_distributed_guess_refuses_new_addresses_but_not_a_known_good_one(checked: list[str]) -> None:
    """Failures for one account from many addresses: past the account's limit an address that
    never signed in to it is refused; the owner's, which did, is still checked and let in."""
    name = unique("carol")
    get_user_model().objects.create_user(name, password=PASSWORD)
    owner = new_client_network() + "1"
    assert sign_in(Client(), name, PASSWORD, owner).status_code == 302  # known good from now on
    for n in range(ACCOUNT_FAILURES_PER_MINUTE):
        assert sign_in(Client(), name, f"guess {n}", new_client_network() + "1").status_code == 200
    assert sign_in(Client(), name, PASSWORD, new_client_network() + "1").status_code == 429
    assert sign_in(Client(), name, PASSWORD, owner).status_code == 302


@pytest.mark.django_db
def test_admin_sign_in_is_throttled_too(checked: list[str]) -> None:
    """Django's admin authenticates through the same backend, so it is no way around the limit."""
    name = unique("root")
    get_user_model().objects.create_user(name, password=PASSWORD, is_staff=True, is_superuser=True)
    client = Client()
    address = new_client_network() + "1"
    for n in range(PAIR_FAILURES_PER_MINUTE + 1):
        client.post("/admin/login/", {"username": name, "password": f"guess {n}"}, REMOTE_ADDR=address)
    assert len(checked) == PAIR_FAILURES_PER_MINUTE


@pytest.mark.django_db
def test_schema_and_docs_never_check_a_password(checked: list[str]) -> None:
    """A Basic header on the schema is no password oracle: the schema needs no credentials at all."""
    name = unique("eve")
    get_user_model().objects.create_user(name, password=PASSWORD)
    basic = "Basic " + base64.b64encode(f"{name}:wrong".encode()).decode()
    client = Client()
    schema = client.get("/api/v1/schema", HTTP_ACCEPT="application/json", HTTP_AUTHORIZATION=basic)
    assert schema.status_code == 200
    assert client.get("/api/v1/docs", HTTP_AUTHORIZATION=basic).status_code == 200
    assert checked == []
    assert set(schema.json()["components"]["securitySchemes"]) == {"apiKey"}


@pytest.mark.django_db
def test_api_takes_api_keys_only(checked: list[str]) -> None:
    """Neither a password (Basic) nor a signed-in session reads a site's data: only its API key."""
    site_key = make_site()
    name = unique("staff")
    get_user_model().objects.create_user(name, password=PASSWORD, is_staff=True, is_superuser=True)
    url = f"/api/v1/sites/{site_key.site.site_id}/aggregate"
    basic = "Basic " + base64.b64encode(f"{name}:{PASSWORD}".encode()).decode()
    assert Client().get(url, HTTP_AUTHORIZATION=basic).status_code == 401
    session = Client()
    session.force_login(get_user_model().objects.get(username=name))
    assert session.get(url).status_code == 401
    assert checked == []
    assert Client().get(url, HTTP_AUTHORIZATION=f"Bearer {site_key.key}").status_code == 200


def test_no_api_view_accepts_basic_or_session_auth() -> None:
    """Every view under /api/v1/ authenticates with API keys or not at all, but the health
    check, which also reads a signed-in staff user's session to show which store failed (it
    reads no site's data); no view takes a password."""

    def views(patterns: list, prefix: str) -> Iterator[tuple[str, object]]:
        for p in patterns:
            if isinstance(p, URLResolver):
                yield from views(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                yield prefix + str(p.pattern), getattr(p.callback, "cls", None)

    api_views = [(route, cls) for route, cls in views(get_resolver().url_patterns, "") if route.startswith("api/")]
    assert len(api_views) >= 8, api_views
    for route, cls in api_views:
        refused = BasicAuthentication if route == "api/v1/health" else BasicAuthentication | SessionAuthentication
        for auth in getattr(cls, "authentication_classes", []):
            assert not issubclass(auth, refused), (route, auth)


@pytest.mark.django_db
@pytest.mark.parametrize(("environment", "hinted"), [("production", False), ("local", True)])
def test_sign_in_page_names_the_demo_script_only_in_development(environment: str, hinted: bool) -> None:
    """Production visitors of the sign-in page are not told to run deploy/local/up.sh."""
    footfall_config.cache_clear()
    try:
        with override_settings(FOOTFALL=dataclasses.replace(settings.FOOTFALL, environment=environment)):
            page = Client().get("/dashboard/login/")
    finally:
        footfall_config.cache_clear()
    assert page.status_code == 200
    assert (b"deploy/local/up.sh" in page.content) is hinted
