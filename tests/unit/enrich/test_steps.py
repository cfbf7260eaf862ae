"""The default pipeline end to end: a valid event, no IP or User-Agent on the wire, drops, purity."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from footfall_capture.enrich.geo import geolocate
from footfall_capture.enrich.pipeline import Draft, Drop, DropReason, SiteContext, enrich
from footfall_capture.enrich.referrer import classify_referrer
from footfall_capture.enrich.steps import DEFAULT_STEPS
from footfall_capture.enrich.urls import canonicalize_url, parse_utm
from footfall_capture.enrich.useragent import detect_bot, parse_user_agent
from footfall_capture.enrich.visitor import assign_visitor_id, respect_dnt
from footfall_capture.events import Event, UserAgent, Utm, encode, validate
from tests.unit.enrich.drafts import (
    CHROME_ANDROID_PHONE,
    CHROME_WINDOWS,
    CTX,
    CURL,
    GOOGLEBOT,
    PUBLIC_IP,
    SAFARI_IPAD,
    SALT,
    make_draft,
)


def run(draft: Draft, ctx: SiteContext = CTX) -> Event:
    return enrich(draft, ctx, DEFAULT_STEPS)


def test_steps_run_in_the_documented_order() -> None:
    """DNT first, UTM before canonicalization, visitor id (which erases the IP) last."""
    assert (
        respect_dnt,
        parse_utm,
        canonicalize_url,
        classify_referrer,
        parse_user_agent,
        detect_bot,
        geolocate,
        assign_visitor_id,
    ) == DEFAULT_STEPS


def test_full_pipeline_builds_a_valid_event() -> None:
    """A realistic page view comes out enriched and passes schema validation."""
    event = run(make_draft())
    assert validate(event) == event
    assert event.url == "https://shop.example/products/42"
    assert (event.host, event.path) == ("shop.example", "/products/42")
    assert event.utm == Utm(source="newsletter", medium="email")
    assert (event.ref_domain, event.ref_type) == ("google.com", "search")
    assert event.ua == UserAgent(browser="Chrome", browser_version="131.0", os="Windows", device="desktop")
    assert event.country == "GB"
    assert event.visitor_id is not None
    assert len(event.visitor_id) == 32


@pytest.mark.parametrize(
    ("ip", "user_agent"),
    [(PUBLIC_IP, CHROME_WINDOWS), ("2a00:1450:4001:80b::200e", SAFARI_IPAD), ("10.0.0.7", CHROME_ANDROID_PHONE)],
)
def test_encoded_event_holds_neither_ip_nor_user_agent(ip: str, user_agent: str) -> None:
    """The wire bytes contain no IP and no raw User-Agent (invariant 5)."""
    data = encode(run(make_draft(ip=ip, user_agent=user_agent)))
    assert ip.encode() not in data
    assert user_agent.encode() not in data


def test_enrich_scrubs_the_callers_draft() -> None:
    """Steps mutate the draft, so the caller's copy loses the IP and User-Agent too."""
    draft = make_draft()
    run(draft)
    assert (draft.ip, draft.user_agent) == (None, "")


def test_same_input_gives_the_same_event() -> None:
    """Two runs over equal drafts give equal events: the steps are pure functions of their input."""
    template = make_draft()
    assert run(dataclasses.replace(template)) == run(dataclasses.replace(template))


def test_visitor_ids_differ_across_salts_and_sites() -> None:
    """The same person is another visitor on another day (salt) or another site."""
    base = run(make_draft()).visitor_id
    next_day = run(make_draft(), dataclasses.replace(CTX, salt=SALT[::-1])).visitor_id
    other_site = run(make_draft(site_id="blog"), dataclasses.replace(CTX, site_id="blog")).visitor_id
    assert len({base, next_day, other_site}) == 3


def test_dnt_drops_the_event() -> None:
    """A DNT request on a site that respects it produces no event."""
    with pytest.raises(Drop) as caught:
        run(make_draft(dnt=True))
    assert caught.value.reason is DropReason.DO_NOT_TRACK


def test_bots_are_dropped_when_the_site_asks() -> None:
    """drop_bots turns a crawler's request into Drop(BOT)."""
    with pytest.raises(Drop) as caught:
        run(make_draft(user_agent=GOOGLEBOT), dataclasses.replace(CTX, drop_bots=True))
    assert caught.value.reason is DropReason.BOT


def test_bots_are_kept_and_flagged_by_default() -> None:
    """By default a bot's event is recorded with is_bot, so the batch can count it apart."""
    event = run(make_draft(user_agent=CURL))
    assert event.ua is not None
    assert (event.ua.is_bot, event.ua.device) == (True, "bot")


def test_server_side_request_without_url_is_valid() -> None:
    """A middleware "request" event without a URL or referrer still validates."""
    event = run(make_draft(type="request", url=None, referrer=None, method="GET", status=200))
    assert validate(event) == event
    assert (event.host, event.path, event.ref_type) == (None, None, "direct")


anything = st.one_of(st.none(), st.text(max_size=3000))
urlish = st.one_of(
    anything,
    st.builds("https://{}".format, st.text()),
    st.builds("http://shop.example/{}".format, st.text()),
    st.sampled_from(["https://www.google.com/", "android-app://com.google.android.gm/", "https://[::1/"]),
)
ips = st.one_of(anything, st.ip_addresses().map(str))
user_agents = st.one_of(st.text(max_size=3000), st.sampled_from([CHROME_WINDOWS, GOOGLEBOT, SAFARI_IPAD, ""]))
contexts = st.builds(
    SiteContext,
    site_id=st.just("shop"),
    domains=st.lists(st.text(max_size=30), max_size=3).map(tuple),
    respect_dnt=st.booleans(),
    drop_bots=st.booleans(),
    salt=st.binary(min_size=1, max_size=64),
)
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def enriched_or_dropped(draft: Draft, ctx: SiteContext) -> None:
    try:
        event = run(draft, ctx)
    except Drop:
        return
    assert validate(event) == event


@FUZZ
@given(url=urlish, referrer=urlish, user_agent=user_agents, ip=ips, dnt=st.booleans(), ctx=contexts)
def test_arbitrary_request_input_never_breaks_the_pipeline(
    url: str | None, referrer: str | None, user_agent: str, ip: str | None, dnt: bool, ctx: SiteContext
) -> None:
    """Any text as url/referrer/User-Agent/IP yields a valid event or a Drop, nothing else."""
    draft = make_draft(type="request", url=url, referrer=referrer, user_agent=user_agent, ip=ip, dnt=dnt)
    enriched_or_dropped(draft, ctx)


@FUZZ
@given(path=st.text(max_size=3000), referrer=urlish, user_agent=user_agents, ip=ips)
def test_arbitrary_page_paths_keep_a_valid_pageview(
    path: str, referrer: str | None, user_agent: str, ip: str | None
) -> None:
    """A page view on the site's own origin keeps a URL whatever follows the slash."""
    draft = make_draft(url="https://shop.example/" + path, referrer=referrer, user_agent=user_agent, ip=ip)
    event = run(draft)
    assert event.url is not None
    assert event.url.startswith("https://shop.example/")
    assert validate(event) == event
