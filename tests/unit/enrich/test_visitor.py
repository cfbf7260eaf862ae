"""Privacy steps: Do-Not-Track and the salted, cookieless visitor id."""

from __future__ import annotations

import re

import pytest

from footfall_capture.enrich.pipeline import Drop, DropReason, SiteContext
from footfall_capture.enrich.visitor import assign_visitor_id, respect_dnt, site_salt, visitor_id
from tests.unit.enrich.drafts import CHROME_WINDOWS, CTX, PUBLIC_IP, SAFARI_IPHONE, SALT, make_draft

OTHER_SALT = b"fedcba9876543210fedcba9876543210"


def vid(*, salt: bytes = SALT, site: str = "shop", ip: str | None = PUBLIC_IP, ua: str = CHROME_WINDOWS) -> str:
    ctx = SiteContext(site_id=site, salt=salt)
    return assign_visitor_id(make_draft(site_id=site, ip=ip, user_agent=ua), ctx).visitor_id or ""


def test_visitor_id_is_32_hex_characters() -> None:
    """The id is a 16-byte digest in lower-case hex (what the event schema accepts)."""
    assert re.fullmatch(r"[0-9a-f]{32}", vid())


def test_visitor_id_is_stable_for_the_same_inputs() -> None:
    """Same salt, site, IP and User-Agent give the same id."""
    assert vid() == vid()


@pytest.mark.parametrize(
    "changed",
    [
        {"salt": OTHER_SALT},
        {"site": "blog"},
        {"ip": "8.8.8.8"},
        {"ua": SAFARI_IPHONE},
        {"ip": None},
    ],
)
def test_visitor_id_changes_with_any_input(changed: dict[str, object]) -> None:
    """A new day's salt, another site, another IP or another browser is another visitor."""
    assert vid(**changed) != vid()  # type: ignore[arg-type]


def test_fields_are_separated_unambiguously() -> None:
    """Moving characters between fields never collides (inputs are length-prefixed)."""
    assert visitor_id(SALT, "ab", "1.2.3.4", "c") != visitor_id(SALT, "a", "b1.2.3.4", "c")
    assert visitor_id(SALT, "a", "", "bc") != visitor_id(SALT, "a", "b", "c")


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("::ffff:81.2.69.142", "81.2.69.142"),
        ("2A00:1450:4001:080B:0000::200E", "2a00:1450:4001:80b::200e"),
        (" 81.2.69.142", "81.2.69.142"),
    ],
)
def test_spellings_of_one_address_are_one_visitor(one: str, other: str) -> None:
    """The IP is hashed in canonical form."""
    assert vid(ip=one) == vid(ip=other)


def test_ip_and_user_agent_are_erased() -> None:
    """After the step the draft no longer holds the IP or the raw User-Agent."""
    draft = assign_visitor_id(make_draft(), CTX)
    assert (draft.ip, draft.user_agent) == (None, "")


@pytest.mark.parametrize("salt", [b"", b"x" * 65])
def test_bad_salt_is_a_programming_error(salt: bytes) -> None:
    """An empty or over-long (BLAKE2b key > 64 bytes) salt raises ValueError."""
    with pytest.raises(ValueError, match="salt"):
        vid(salt=salt)


def test_dnt_drops_when_the_site_respects_it() -> None:
    """DNT with respect_dnt raises Drop(DO_NOT_TRACK)."""
    with pytest.raises(Drop) as caught:
        respect_dnt(make_draft(dnt=True), CTX)
    assert caught.value.reason is DropReason.DO_NOT_TRACK


@pytest.mark.parametrize(
    ("dnt", "respect"),
    [(False, True), (True, False), (False, False)],
)
def test_dnt_passes_otherwise(dnt: bool, respect: bool) -> None:
    """Without DNT, or on a site that ignores it, the draft passes unchanged."""
    draft = make_draft(dnt=dnt)
    assert respect_dnt(draft, SiteContext(site_id="shop", respect_dnt=respect, salt=SALT)) is draft


def test_a_sites_salt_is_its_own_and_of_its_day() -> None:
    """32 bytes, the same for the same day and site, another for another site or day."""
    shop = site_salt(SALT, "shop")
    assert len(shop) == 32
    assert shop == site_salt(SALT, "shop")
    assert shop not in {site_salt(SALT, "blog"), site_salt(OTHER_SALT, "shop"), SALT}
    with pytest.raises(ValueError, match="empty"):
        site_salt(b"", "shop")


def test_a_sites_salt_makes_its_visitor_ids_and_no_other_sites() -> None:
    """What the collector computes from the day's salt, a host given only its site's salt computes too."""
    shop = site_salt(SALT, "shop")
    assert vid(salt=shop, site="shop") == visitor_id(shop, "shop", PUBLIC_IP, CHROME_WINDOWS)
    assert vid(salt=site_salt(SALT, "blog"), site="blog") != visitor_id(shop, "blog", PUBLIC_IP, CHROME_WINDOWS)
