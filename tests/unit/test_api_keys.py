"""API keys: shown once, stored hashed, compared in constant time, revocable."""

from __future__ import annotations

import pytest

from footfall.models import ApiKey, Site

pytestmark = pytest.mark.django_db


@pytest.fixture
def site() -> Site:
    return Site.objects.create(site_id="keys-test", name="Keys", domains=["example.com"])


def test_issued_key_authenticates_and_only_its_hash_is_stored(site: Site) -> None:
    row, key = ApiKey.issue(site, "ci", ["ingest"])
    assert key.startswith("ff_")
    assert key not in {row.key_hash, row.prefix}
    assert key[20:] not in str(ApiKey.objects.values_list().get(pk=row.pk))  # the secret part is not stored
    assert ApiKey.authenticate(key) == row


@pytest.mark.parametrize(
    "mangle",
    [lambda k: k[:-1] + ("A" if k[-1] != "A" else "B"), lambda k: "", lambda k: "ff_x", lambda k: k + "x" * 300],
)
def test_wrong_keys_are_refused(site: Site, mangle) -> None:
    _, key = ApiKey.issue(site, "ci", ["read"])
    assert ApiKey.authenticate(mangle(key)) is None


def test_revoked_key_is_refused(site: Site) -> None:
    row, key = ApiKey.issue(site, "ci", ["read"])
    row.revoke()
    assert ApiKey.authenticate(key) is None


def test_scopes_are_checked(site: Site) -> None:
    with pytest.raises(ValueError, match="scopes"):
        ApiKey.issue(site, "ci", ["admin"])


def test_site_origins_default_to_its_domains(site: Site) -> None:
    assert site.origins() == {"https://example.com", "http://example.com"}
    site.allowed_origins = ["https://App.example.com/"]
    assert site.origins() == {"https://app.example.com"}
