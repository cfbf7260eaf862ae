"""``manage.py kafka_topics`` and the topic code against the stack's broker."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from django.core.management import call_command
from django.core.management.base import CommandError

from footfall.config import Config
from footfall.kafka_topics import TopicError, ensure_topics, wanted_topics


@pytest.fixture
def names(kafka_admin: AdminClient) -> Iterator[tuple[str, str]]:
    """Names for an events topic and its invalid-events topic, deleted afterwards if made."""
    name = f"topics-{uuid.uuid4().hex[:10]}"
    yield name, f"{name}.invalid"
    present = set(kafka_admin.list_topics(timeout=10).topics)
    doomed = [n for n in (name, f"{name}.invalid") if n in present]
    for future in kafka_admin.delete_topics(doomed).values() if doomed else ():
        future.result(timeout=30)


def test_check_passes_on_the_stacks_topics(capsys: pytest.CaptureFixture[str]) -> None:
    """The stack made its topics with the same code, so a check finds nothing to report."""
    call_command("kafka_topics", "--check")
    assert "ok: events, events.invalid" in capsys.readouterr().out


def test_creates_missing_topics_then_reports_differences(
    cfg: Config, kafka_admin: AdminClient, names: tuple[str, str]
) -> None:
    """--check creates nothing; a create makes both topics as configured; a later change of the
    configuration is reported, not applied."""
    mine = dataclasses.replace(cfg, events_topic=names[0], invalid_topic=names[1], events_partitions=2)
    assert ensure_topics(kafka_admin, wanted_topics(mine), create=False).missing == list(names)
    assert ensure_topics(kafka_admin, wanted_topics(mine)).created == list(names)
    # A topic made moments ago may not be in a busy broker's metadata yet (seen in CI: 0 partitions).
    deadline = time.monotonic() + 30
    while not (topic := kafka_admin.list_topics(names[0], timeout=10).topics[names[0]]).partitions:
        assert time.monotonic() < deadline, topic
        time.sleep(0.2)
    assert len(topic.partitions) == 2
    assert ensure_topics(kafka_admin, wanted_topics(mine)).differences == []
    more = dataclasses.replace(mine, events_partitions=4)
    assert ensure_topics(kafka_admin, wanted_topics(more)).differences == [
        f"{names[0]}: 2 partitions, configured 4 (FOOTFALL_EVENTS_PARTITIONS)"
    ]


def test_an_events_topic_keeping_less_than_the_window_is_refused(
    cfg: Config, kafka_admin: AdminClient, names: tuple[str, str]
) -> None:
    """An existing events topic that deletes events before the realtime window ends fails the check, saying why."""
    short = NewTopic(names[0], num_partitions=1, replication_factor=1, config={"retention.ms": "3600000"})
    kafka_admin.create_topics([short])[names[0]].result(timeout=30)
    mine = dataclasses.replace(cfg, events_topic=names[0], invalid_topic=names[1])
    with pytest.raises(TopicError, match=rf"topic {names[0]} keeps events for 3600000 ms.*rebuilt from the log"):
        ensure_topics(kafka_admin, wanted_topics(mine))


def test_command_fails_on_differences(cfg: Config, settings: object, names: tuple[str, str]) -> None:
    """The command exits non-zero when a topic is missing under --check."""
    from footfall.config import footfall_config

    footfall_config.cache_clear()
    settings.FOOTFALL = dataclasses.replace(cfg, events_topic=names[0], invalid_topic=names[1])  # type: ignore[attr-defined]
    try:
        with pytest.raises(CommandError, match="2 difference"):
            call_command("kafka_topics", "--check")
    finally:
        footfall_config.cache_clear()
