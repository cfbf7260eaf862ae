"""Footfall's Kafka topics: what they must look like, created when missing, checked when present.

One home for the topics' shape, used by ``manage.py kafka_topics`` and the local stack. The
events topic keeps ``FOOTFALL_EVENTS_RETENTION_MS`` (validated in :mod:`footfall.config` to
cover the realtime window, so the counters can be rebuilt from the log); an existing topic
that keeps less is refused with :class:`TopicError`. Partition counts and replication are
reported when they differ, never changed here: more partitions move keys between partitions
(a visitor's events lose their order for a moment) and a replica reassignment moves data, so
both are the operator's call (``docs/operations.md``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from footfall.config import Config, least_events_retention_ms
from footfall_capture.kafka import client_config

INVALID_RETENTION_MS = 30 * 86_400_000
TIMEOUT_S = 30.0


class TopicError(RuntimeError):
    """A topic cannot be made or kept as Footfall needs it; the message says what and how to fix it."""


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A topic as Footfall wants it."""

    name: str
    partitions: int
    replication_factor: int
    config: dict[str, str] = field(default_factory=dict)
    least_retention_ms: int | None = None  # refuse an existing topic keeping less


@dataclass
class TopicReport:
    """What :func:`ensure_topics` found: topics created, and differences of existing ones."""

    created: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)


def wanted_topics(cfg: Config) -> list[TopicSpec]:
    """The events topic and the invalid-events topic for ``cfg``."""
    replicas = {"min.insync.replicas": str(cfg.min_insync_replicas)}
    return [
        TopicSpec(
            cfg.events_topic,
            cfg.events_partitions,
            cfg.replication_factor,
            {"retention.ms": str(cfg.events_retention_ms), **replicas},
            least_retention_ms=least_events_retention_ms(cfg.realtime_retention_s),
        ),
        TopicSpec(
            cfg.invalid_topic, 1, cfg.replication_factor, {"retention.ms": str(INVALID_RETENTION_MS), **replicas}
        ),
    ]


def admin_client(cfg: Config) -> AdminClient:
    """An admin client with the configured brokers and security."""
    return AdminClient(client_config(cfg.kafka))


def ensure_topics(admin: AdminClient, specs: list[TopicSpec], create: bool = True) -> TopicReport:
    """Create the missing topics of ``specs`` (unless ``create`` is false) and compare the others.

    Raises :class:`TopicError` when a topic cannot be created or an existing events topic keeps
    events for less than the realtime window."""
    report = TopicReport()
    try:
        existing = admin.list_topics(timeout=TIMEOUT_S).topics
    except KafkaException as exc:
        raise TopicError(f"Kafka unreachable: {exc.args[0]}") from exc
    absent = [spec for spec in specs if spec.name not in existing]
    if absent and create:
        already = _create(admin, absent)
        report.created = [spec.name for spec in absent if spec.name not in already]
        if already:  # made by another process just now (or not in this broker's metadata yet): checked too
            existing = _listed(admin, already)
    elif absent:
        report.missing = [spec.name for spec in absent]
    present = [spec for spec in specs if spec.name in existing]
    configs = _configs(admin, [spec.name for spec in present])
    for spec in present:
        partitions = existing[spec.name].partitions
        report.differences += _compare(spec, len(partitions), min(len(p.replicas) for p in partitions.values()),
                                       configs[spec.name])  # fmt: skip
    return report


def _create(admin: AdminClient, specs: list[TopicSpec]) -> list[str]:
    """Create ``specs``' topics; the names of those that existed already."""
    new = [NewTopic(s.name, num_partitions=s.partitions, replication_factor=s.replication_factor, config=s.config)
           for s in specs]  # fmt: skip
    already = []
    for name, future in admin.create_topics(new, operation_timeout=TIMEOUT_S).items():
        try:
            future.result(timeout=2 * TIMEOUT_S)
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise TopicError(f"could not create topic {name}: {exc.args[0]}") from exc
            already.append(name)  # another process made it meanwhile: its settings are checked
    return already


def _listed(admin: AdminClient, names: list[str]) -> dict[str, object]:
    """Every topic, once ``names`` (which exist) show in the broker's metadata too (a topic just
    made elsewhere may take a moment to)."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        topics = admin.list_topics(timeout=TIMEOUT_S).topics
        if set(names) <= set(topics) or time.monotonic() > deadline:
            return topics
        time.sleep(0.2)


def _configs(admin: AdminClient, names: list[str]) -> dict[str, dict[str, str]]:
    if not names:
        return {}
    resources = [ConfigResource(ConfigResource.Type.TOPIC, name) for name in names]
    out = {}
    for resource, future in admin.describe_configs(resources, request_timeout=TIMEOUT_S).items():
        entries = future.result(timeout=2 * TIMEOUT_S)
        out[resource.name] = {key: str(entry.value) for key, entry in entries.items()}
    return out


def _compare(spec: TopicSpec, partitions: int, replicas: int, config: dict[str, str]) -> list[str]:
    """The differences of an existing topic from ``spec``; raises :class:`TopicError` for a
    retention too short to rebuild the realtime window from."""
    retention = int(config.get("retention.ms", "-1"))
    if spec.least_retention_ms is not None and retention != -1 and retention < spec.least_retention_ms:
        raise TopicError(
            f"topic {spec.name} keeps events for {retention} ms, less than the {spec.least_retention_ms} ms "
            "it must (the realtime window, FOOTFALL_REALTIME_RETENTION_HOURS, plus an hour): the counters "
            "could not be rebuilt from the log. Raise it: kafka-configs.sh --alter --entity-type topics --entity-name "
            f"{spec.name} --add-config retention.ms={spec.config['retention.ms']}"
        )
    found = []
    if partitions != spec.partitions:
        found.append(f"{spec.name}: {partitions} partitions, configured {spec.partitions} (FOOTFALL_EVENTS_PARTITIONS)")
    if replicas != spec.replication_factor:
        found.append(
            f"{spec.name}: replication factor {replicas}, configured {spec.replication_factor} "
            "(FOOTFALL_REPLICATION_FACTOR)"
        )
    for key, value in spec.config.items():
        if config.get(key) != value:
            found.append(f"{spec.name}: {key}={config.get(key)}, configured {value}")
    return found
