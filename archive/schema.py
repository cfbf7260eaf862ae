"""The archive's file format: the one contract between the archiver and the Spark jobs.

The master dataset is Parquet under ``{ARCHIVE_URL}/events/``, Hive-partitioned by the
event's site and UTC date and hour::

    events/site_id=<site>/date=<YYYY-MM-DD>/hour=<HH>/part-<random hex>.parquet

(a random name: a batch archived again after a lost offset commit, or a compacted hour,
gets a file of its own and never replaces one a reader may be scanning)

Columns are the event's fields, flattened (nested ``utm`` and ``ua`` become ``utm_*`` and
``ua_*``), with times as int64 milliseconds UTC, plus ``raw``: the event exactly as it was
on the log, so fields that this schema does not know (a newer producer's) are kept, and
the Kafka provenance of each row. Files are immutable; a row may appear in several files
(at-least-once archiving); the rollup deduplicates by ``event_id``.

Pure data definitions: no Spark session or I/O here. The Arrow schema is used to write,
the Spark DDL to read (so Spark never infers types from files).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import msgspec
import pyarrow as pa

from footfall_capture.events import Event

ARCHIVE_VERSION = 1
EVENTS_DIR = "events"

ARROW_SCHEMA = pa.schema(
    [
        ("event_id", pa.string()),
        ("type", pa.string()),
        ("ts", pa.int64()),
        ("received_at", pa.int64()),
        ("url", pa.string()),
        ("host", pa.string()),
        ("path", pa.string()),
        ("title", pa.string()),
        ("referrer", pa.string()),
        ("ref_domain", pa.string()),
        ("ref_type", pa.string()),
        ("utm_source", pa.string()),
        ("utm_medium", pa.string()),
        ("utm_campaign", pa.string()),
        ("utm_term", pa.string()),
        ("utm_content", pa.string()),
        ("visitor_id", pa.string()),
        ("ua_browser", pa.string()),
        ("ua_os", pa.string()),
        ("ua_device", pa.string()),
        ("is_bot", pa.bool_()),
        ("country", pa.string()),
        ("method", pa.string()),
        ("status", pa.int32()),
        ("duration_ms", pa.float64()),
        ("props", pa.string()),  # JSON object, as sent
        ("raw", pa.binary()),  # the event exactly as it was on the log
        ("kafka_partition", pa.int32()),
        ("kafka_offset", pa.int64()),
    ]
)
PARTITION_COLUMNS = ("site_id", "date", "hour")

# Spark's view of the same files: the file columns plus the partition columns.
SPARK_DDL = (
    "event_id STRING, type STRING, ts BIGINT, received_at BIGINT, url STRING, host STRING, path STRING, "
    "title STRING, referrer STRING, ref_domain STRING, ref_type STRING, utm_source STRING, utm_medium STRING, "
    "utm_campaign STRING, utm_term STRING, utm_content STRING, visitor_id STRING, ua_browser STRING, "
    "ua_os STRING, ua_device STRING, is_bot BOOLEAN, country STRING, method STRING, status INT, "
    "duration_ms DOUBLE, props STRING, raw BINARY, kafka_partition INT, kafka_offset BIGINT, "
    "site_id STRING, date STRING, hour STRING"
)


def to_row(event: Event, raw: bytes, partition: int, offset: int) -> dict[str, object]:
    """One archive row (file columns only) for ``event`` as read from the log."""
    utm, ua = event.utm, event.ua
    return {
        "event_id": event.event_id,
        "type": event.type,
        "ts": event.ts,
        "received_at": event.received_at,
        "url": event.url,
        "host": event.host,
        "path": event.path,
        "title": event.title,
        "referrer": event.referrer,
        "ref_domain": event.ref_domain,
        "ref_type": event.ref_type,
        "utm_source": utm.source if utm else None,
        "utm_medium": utm.medium if utm else None,
        "utm_campaign": utm.campaign if utm else None,
        "utm_term": utm.term if utm else None,
        "utm_content": utm.content if utm else None,
        "visitor_id": event.visitor_id,
        "ua_browser": ua.browser if ua else None,
        "ua_os": ua.os if ua else None,
        "ua_device": ua.device if ua else None,
        "is_bot": bool(ua and ua.is_bot),
        "country": event.country,
        "method": event.method,
        "status": event.status,
        "duration_ms": event.duration_ms,
        "props": encode_props(event),
        "raw": raw,
        "kafka_partition": partition,
        "kafka_offset": offset,
    }


def encode_props(event: Event) -> str | None:
    return msgspec.json.encode(event.props).decode() if event.props else None


def partition_path(site_id: str, ts_ms: int) -> str:
    """``site_id=…/date=…/hour=…`` of an event time (UTC)."""
    moment = dt.datetime.fromtimestamp(ts_ms / 1000, dt.UTC)
    return f"{date_folder(site_id, f'{moment:%Y-%m-%d}')}/hour={moment:%H}"


def date_folder(site_id: str, date: str) -> str:
    """``site_id=…/date=…``: the partitions of a site's UTC date (ISO, as :func:`utc_dates_for` gives)."""
    return f"site_id={site_id}/date={date}"


def utc_dates_for(days: Sequence[str]) -> list[str]:
    """UTC dates whose partitions can hold events of these local days (zones span -12..+14 h),
    plus the day before, whose evening sessions may run into the first requested day."""
    first = dt.date.fromisoformat(min(days)) - dt.timedelta(days=2)
    last = dt.date.fromisoformat(max(days)) + dt.timedelta(days=1)
    return [(first + dt.timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]
