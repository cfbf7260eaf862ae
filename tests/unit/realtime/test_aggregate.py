"""Batch pre-aggregation (pure): the increments the store will apply."""

from __future__ import annotations

import uuid
from collections import Counter

import msgspec

from footfall.demo import DemoTraffic
from footfall.vocabulary import MAX_ENGAGED_MS, PROP_SEPARATOR
from footfall_capture.events import Event, UserAgent
from realtime.aggregate import aggregate, dimension_values, engaged_ms, event_props
from realtime.keys import KeyLayout, fingerprint, visitor_member

NOW = 1_763_700_000_000
LAYOUT = KeyLayout(retention_s=3600)


def events(n: int, seed: int = 1) -> list:
    traffic = DemoTraffic(seed=seed, visitors=40)
    return [traffic.event(NOW - 600_000 + i * 1000) for i in range(n)]


def test_same_events_same_batch() -> None:
    """Aggregation is a pure function of its input (safe to redo after a crash)."""
    batch = events(300)
    a, b = aggregate(batch, LAYOUT, NOW), aggregate(list(batch), LAYOUT, NOW)
    assert (a.zincr, a.hincr, a.pfadd, a.seen_at, a.expire_at) == (b.zincr, b.hincr, b.pfadd, b.seen_at, b.expire_at)
    assert a.value_visitors == b.value_visitors
    assert a.marks == b.marks


def is_hour_key(key: str) -> bool:
    return key.split(":")[3].startswith("h")


def test_counts_sum_to_the_events() -> None:
    batch = events(500)
    agg = aggregate(batch, LAYOUT, NOW)
    assert sum(v for (k, f), v in agg.hincr.items() if f == "pageviews" and not is_hour_key(k)) == 500
    page_total = sum(v for (k, _), v in agg.zincr.items() if k.endswith(":top:page") and not is_hour_key(k))
    assert page_total == 500
    minute = batch[0].ts // 60_000
    assert agg.expire_at[LAYOUT.counters("demo", minute)] == (minute + 1) * 60 + 3600


def test_hour_keys_sum_their_minutes() -> None:
    """Events over three UTC hours: each hour's hash and visitors are its minutes' sums and
    union, and expire with the hour's last minute."""
    traffic = DemoTraffic(seed=2, visitors=40)
    start = NOW // 3_600_000 * 3_600_000 - 2 * 3_600_000
    batch = [traffic.event(start + i * 7_000) for i in range(1500)]  # up to 2 h 55 min
    agg = aggregate(batch, KeyLayout(retention_s=48 * 3600), NOW)
    value_visitors = agg.value_visitors  # a view computed on each access
    for hour in range(start // 3_600_000, start // 3_600_000 + 3):
        minutes = range(hour * 60, hour * 60 + 60)
        in_hour = [e for e in batch if e.ts // 3_600_000 == hour]
        hour_fields = {f: v for (k, f), v in agg.hincr.items() if k == LAYOUT.hour_counters("demo", hour)}
        minute_fields: dict[str, int] = {}
        minute_keys = {LAYOUT.counters("demo", m) for m in minutes}
        for (k, f), v in agg.hincr.items():
            if k in minute_keys:
                minute_fields[f] = minute_fields.get(f, 0) + v
        assert hour_fields == minute_fields
        assert hour_fields["pageviews"] == len(in_hour)
        hour_uv = agg.pfadd[LAYOUT.hour_visitors("demo", hour)]
        assert hour_uv == {visitor_member(e.visitor_id) for e in in_hour}
        hour_pages = {v: n for (k, v), n in agg.zincr.items() if k == LAYOUT.hour_top("demo", hour, "page")}
        assert hour_pages == Counter(e.path for e in in_hour)
        for path in hour_pages:  # a value's visitors are kept per minute: their union is the hour's
            keys = [LAYOUT.dim_visitors("demo", m, "page", path) for m in minutes]
            uv = set().union(*(value_visitors.get(k, set()) for k in keys))
            assert uv == {visitor_member(e.visitor_id) for e in in_hour if e.path == path}
        expires = agg.expire_at[LAYOUT.hour_counters("demo", hour)]
        assert expires == agg.expire_at[LAYOUT.hour_visitors("demo", hour)] == (hour + 1) * 3600 + 48 * 3600


def test_duplicates_within_a_batch_count_once() -> None:
    batch = events(50)
    agg = aggregate(batch + batch[:10], LAYOUT, NOW)
    assert agg.events == 50
    assert agg.duplicates_in_batch == 10
    assert sum(v for (k, f), v in agg.hincr.items() if f == "pageviews" and not is_hour_key(k)) == 50


def test_late_events_are_left_to_the_batch_layer() -> None:
    old = msgspec.structs.replace(events(1)[0], ts=NOW - 2 * 3600 * 1000)
    agg = aggregate([old], LAYOUT, NOW)
    assert agg.late == 1
    assert agg.events == 0
    assert not agg.hincr


def test_bots_are_counted_apart() -> None:
    bot = msgspec.structs.replace(events(1)[0], ua=UserAgent(browser="Googlebot", device="bot", is_bot=True))
    agg = aggregate([bot], LAYOUT, NOW)
    fields = {f: v for (_, f), v in agg.hincr.items()}
    assert fields == {"events": 1, "bot_events": 1}
    assert not agg.zincr
    assert not agg.pfadd


def test_custom_events_count_as_events_not_pageviews() -> None:
    """A custom event adds to events and custom_events, never a hash field of its own name
    (names are attacker-controlled: they are counted, capped, in the ``event`` dimension)."""
    signup = msgspec.structs.replace(events(1)[0], type="signup")
    fields = {f: v for (_, f), v in aggregate([signup], LAYOUT, NOW).hincr.items()}
    assert fields == {"events": 1, "custom_events": 1}


def test_custom_events_and_their_properties_per_minute_and_hour() -> None:
    """Each custom event counts once under its name and once per property value (text as
    prop_text writes it), with its visitor; page views and engagement reports are not custom."""
    base = events(40)
    minute = base[0].ts // 60_000
    customs = [
        msgspec.structs.replace(e, event_id=str(uuid.uuid4()), ts=minute * 60_000 + i, type=name, props=props)
        for i, (e, name, props) in enumerate([
            (base[0], "signup", {"plan": "pro", "seats": 3}),
            (base[1], "signup", {"plan": "pro", "trial": True}),
            (base[2], "signup", {"plan": None}),
            (base[3], "download", None),
            (base[4], "engagement", {"engaged_ms": 5000}),
            (base[5], "request", None),
        ])
    ]  # fmt: skip
    agg = aggregate(customs, LAYOUT, NOW)
    names = {v: n for (k, v), n in agg.zincr.items() if k == LAYOUT.top("demo", minute, "event")}
    assert names == {"signup": 3, "download": 1}
    props = {v: n for (k, v), n in agg.zincr.items() if k == LAYOUT.top("demo", minute, "event_prop")}
    sep = PROP_SEPARATOR
    assert props == {
        f"signup{sep}plan{sep}pro": 2, f"signup{sep}seats{sep}3": 1, f"signup{sep}trial{sep}true": 1,
        f"signup{sep}plan{sep}": 1,
    }  # fmt: skip
    hour = minute // 60
    assert {v: n for (k, v), n in agg.zincr.items() if k == LAYOUT.hour_top("demo", hour, "event")} == names
    pro = agg.value_visitors[LAYOUT.dim_visitors("demo", minute, "event_prop", f"signup{sep}plan{sep}pro")]
    assert pro == {visitor_member(base[0].visitor_id), visitor_member(base[1].visitor_id)}
    fields = {f: v for (k, f), v in agg.hincr.items() if k == LAYOUT.counters("demo", minute)}
    assert fields["custom_events"] == 4
    assert fields["event:engagement"] == fields["event:request"] == 1
    assert not any(f.startswith("event:signup") for f in fields)


def test_a_property_name_holding_the_separator_is_left_out() -> None:
    event = msgspec.structs.replace(events(1)[0], type="x", props={f"a{PROP_SEPARATOR}b": "c", "d": 1})
    assert event_props(event) == [f"x{PROP_SEPARATOR}d{PROP_SEPARATOR}1"]


def report(base: Event, ts: int, ms: object, *, path: str = "/a", ref: str | None = None) -> Event:
    """An engagement report of ``ms`` engaged milliseconds on ``path``, referred by ``ref`` (a domain)."""
    return msgspec.structs.replace(
        base, event_id=str(uuid.uuid4()), ts=ts, type="engagement", path=path, url=f"https://x{path}",
        referrer=f"https://{ref}/" if ref else None, ref_domain=ref, props={"engaged_ms": ms, "scroll_depth": 40},
    )  # fmt: skip


def test_engaged_time_is_capped_per_report_and_summed_per_page_and_referrer() -> None:
    """Reports add their engaged ms (each within 0..MAX_ENGAGED_MS, 0 when not a number) and
    one report, per page and per referrer label, to the minute and the hour; bots' do not."""
    base = events(1)[0]
    minute = (NOW - 600_000) // 60_000
    at = minute * 60_000
    bot = msgspec.structs.replace(report(base, at, 9000), ua=UserAgent(is_bot=True, device="bot"))
    batch = [
        report(base, at + 1, 5000, ref="google.com"),
        report(base, at + 2, 10 * MAX_ENGAGED_MS, ref="google.com"),
        report(base, at + 3, -50, path="/b"),
        report(base, at + 4, "soon", path="/b"),
        report(base, at + 5, 1234.9, path="/b", ref="t.co"),
        bot,
    ]
    agg = aggregate(batch, LAYOUT, NOW)
    fields = {f: v for (k, f), v in agg.hincr.items() if k == LAYOUT.counters("demo", minute)}
    assert (fields["engagements"], fields["engaged_ms"]) == (5, 5000 + MAX_ENGAGED_MS + 1234)
    assert "custom_events" not in fields
    pages = {v: n for (k, v), n in agg.engaged.items() if k == LAYOUT.engagements("demo", minute, "page")}
    assert pages == {"/a": (2, 5000 + MAX_ENGAGED_MS), "/b": (3, 1234)}
    refs = {v: n for (k, v), n in agg.engaged.items() if k == LAYOUT.hour_engagements("demo", minute // 60, "ref")}
    assert refs == {"google.com": (2, 5000 + MAX_ENGAGED_MS), "(direct)": (2, 0), "t.co": (1, 1234)}
    assert not agg.zincr  # no page views, no custom events
    assert {op.amount_key for op in agg.amounts} <= set(agg.expire_at)
    again = aggregate(list(reversed(batch)), LAYOUT, NOW)
    assert again.engaged == agg.engaged
    assert engaged_ms(msgspec.structs.replace(base, props={"engaged_ms": True})) == 0


LONE, VIEWER = "a1" * 16, "b2" * 16


def test_an_engagement_report_alone_makes_no_visitor() -> None:
    """A tab hidden after midnight sends a report in a minute (and hour) where its visitor did
    nothing else: no visitor there, nor a concurrent one; a page view in the minute does."""
    base = events(1)[0]
    minute = (NOW - 600_000) // 60_000
    lone = msgspec.structs.replace(report(base, minute * 60_000, 5000), visitor_id=LONE)
    viewer = msgspec.structs.replace(base, event_id=str(uuid.uuid4()), ts=minute * 60_000 + 1, visitor_id=VIEWER)
    agg = aggregate([lone, msgspec.structs.replace(report(base, minute * 60_000 + 2, 1), visitor_id=VIEWER), viewer],
                    LAYOUT, NOW)  # fmt: skip
    for key in (LAYOUT.visitors("demo", minute), LAYOUT.hour_visitors("demo", minute // 60)):
        assert agg.pfadd[key] == {visitor_member(VIEWER)}
    assert {member for (_, member) in agg.seen_at} == {visitor_member(VIEWER)}
    fields = {f: v for (k, f), v in agg.hincr.items() if k == LAYOUT.counters("demo", minute)}
    assert (fields["engagements"], fields["engaged_ms"]) == (2, 5001)  # their engaged time still counts
    alone = aggregate([lone], LAYOUT, NOW)
    assert not alone.pfadd
    assert not alone.seen_at


def test_dimension_values_of_a_direct_visit() -> None:
    event = msgspec.structs.replace(events(1)[0], referrer=None, ref_domain=None, ref_type="direct", utm=None)
    values = dimension_values(event)
    assert values["ref"] == "(direct)"
    assert values["refpage"] == f"(direct)\x1f{event.path}"
    assert "refurl" not in values
    assert "utm_source" not in values


def test_skip_drops_already_counted_events() -> None:
    batch = events(20)
    skip = {fingerprint(e.event_id) for e in batch[:5]}
    agg = aggregate(batch, LAYOUT, NOW, skip)
    assert agg.events == 15
    assert not skip & {fp for marks in agg.marks.values() for fp in marks}


def test_referrer_labels_match_the_batch_layer() -> None:
    """(direct) only without a referrer, (unknown) for one naming no host or app, an app's
    package id as its own value: the labels spark_jobs.transforms gives."""
    traffic = DemoTraffic(seed=3, visitors=5)
    base = traffic.event(NOW - 60_000)
    cases = {
        None: (None, "(direct)"),
        "about:blank": (None, "(unknown)"),
        "android-app://com.example.chat/": ("com.example.chat", "com.example.chat"),
    }
    for referrer, (domain, label) in cases.items():
        event = msgspec.structs.replace(base, referrer=referrer, ref_domain=domain)
        assert dimension_values(event)["ref"] == label
        assert dimension_values(event)["refpage"] == f"{label}\x1f{event.path}"


def test_a_minutes_values_name_their_hours_marker_and_sketches() -> None:
    """A minute's value operations carry what the store needs to add a late visitor to the
    value's hour sketch once the hour is merged (realtime.keys, Value hours); hours' none."""
    agg = aggregate(events(200), LAYOUT, NOW)
    minute_ops = [op for op in agg.values if op.visitors_prefix]
    assert minute_ops
    assert len(minute_ops) < len(agg.values)
    for op in minute_ops:
        hour = int(op.top_key.split(":")[3]) // 60
        dim = op.top_key.rsplit(":", 1)[1]
        assert op.hour_marker == LAYOUT.hour_merged("demo", hour)
        assert op.hour_prefix + op.value == LAYOUT.hour_dim_visitors("demo", hour, dim, op.value)
        assert op.hour_expire_at == LAYOUT.hour_expires_at(hour)
    assert all(op.hour_marker == op.hour_prefix == "" for op in agg.values if not op.visitors_prefix)


def test_revenue_is_summed_per_event_amount_property_and_currency() -> None:
    """Every valid amount of a custom event is summed under its event and property, alone (fixed-currency
    goals) and with each currency-coded property (goals naming one); invalid amounts add nothing."""
    base = Event(event_id=str(uuid.uuid4()), site_id="s", ts=NOW - 60_000, received_at=NOW, schema=1, type="purchase",
                 visitor_id="ab" * 16)  # fmt: skip

    def purchase(**props: object) -> Event:
        return msgspec.structs.replace(base, event_id=str(uuid.uuid4()), props=props)

    sent = [
        purchase(amount=19.99, currency="eur", qty=2),
        purchase(amount="0.01", currency="EUR", note="EUR"),
        purchase(amount="lots", currency="EUR"),
        purchase(amount=-1, currency="USD"),
        msgspec.structs.replace(purchase(amount=100, currency="EUR"), ua=UserAgent(is_bot=True)),
    ]
    batch = aggregate(sent, LAYOUT, NOW)
    minute = (NOW - 60_000) // 60_000
    sep = PROP_SEPARATOR
    got = {value: sums for (key, value), sums in batch.engaged.items() if key == LAYOUT.revenues("s", minute)}
    assert got == {
        f"purchase{sep}amount{sep}": (2, 199_900 + 100),
        f"purchase{sep}amount{sep}currency{sep}EUR": (2, 199_900 + 100),
        f"purchase{sep}amount{sep}note{sep}EUR": (1, 100),
        f"purchase{sep}qty{sep}": (1, 20_000),
        f"purchase{sep}qty{sep}currency{sep}EUR": (1, 20_000),
    }
    hour = {
        value: sums for (key, value), sums in batch.engaged.items() if key == LAYOUT.hour_revenues("s", minute // 60)
    }
    assert hour == got
