"""The archiver: a second consumer group on ``events`` that writes every raw event to the archive.

arroyo steps (the realtime worker is a batch loop of its own, :mod:`realtime.consumer`)::

    decode ──▶ Reduce (batch by size and time) ──▶ write Parquet files (atomic) ──▶ CommitOffsets

Offsets are committed only after the batch's files are durable, so a crash (kill -9) at
any point loses nothing: the uncommitted messages are archived again on restart (a
duplicate row, removed by the rollup's dedup). Messages that are not valid events are not
archived (the realtime workers route them to the invalid-events topic with a reason); they
are counted in the archiver's stats.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from arroyo.backends.kafka import KafkaPayload
from arroyo.commit import ONCE_PER_SECOND
from arroyo.processing import StreamProcessor
from arroyo.processing.strategies import CommitOffsets, ProcessingStrategy, ProcessingStrategyFactory, Reduce, RunTask
from arroyo.types import BaseValue, BrokerValue, Commit, Message, Partition, Topic

from archive.group import GROUP
from archive.schema import partition_path, to_row
from archive.store import Archive, ArchiveRow
from footfall.config import Config
from footfall.kafka_client import GroupWatch, group_consumer
from footfall_capture.events import InvalidEvent, decode

log = logging.getLogger(__name__)


@dataclass
class Pending:
    rows: list[ArchiveRow] = field(default_factory=list)
    invalid: int = 0


def to_archive_row(message: Message[KafkaPayload]) -> ArchiveRow | None:
    """Decode step: the archive row of a message, or None for a message that is no event."""
    value = message.value
    assert isinstance(value, BrokerValue)
    raw = value.payload.value
    try:
        event = decode(raw)
    except InvalidEvent:
        return None
    return ArchiveRow(partition_path(event.site_id, event.ts), to_row(event, raw, value.partition.index, value.offset))


def collect(pending: Pending, value: BaseValue[ArchiveRow | None]) -> Pending:
    if value.payload is None:
        pending.invalid += 1
    else:
        pending.rows.append(value.payload)
    return pending


class ArchiverFactory(ProcessingStrategyFactory[KafkaPayload]):
    def __init__(self, archive: Archive, max_batch_size: int, max_batch_time: float) -> None:
        self.archive = archive
        self.max_batch_size = max_batch_size
        self.max_batch_time = max_batch_time
        self.stats = {"archived": 0, "files": 0, "invalid": 0}

    def _write(self, message: Message[Pending]) -> Pending:
        pending = message.payload
        started = time.monotonic()
        files = self.archive.write(pending.rows)
        self.stats["archived"] += len(pending.rows)
        self.stats["files"] += len(files)
        self.stats["invalid"] += pending.invalid
        log.info("archived %d events in %d files (%.2fs)", len(pending.rows), len(files), time.monotonic() - started)
        return pending

    def create_with_partitions(
        self, commit: Commit, partitions: Mapping[Partition, int]
    ) -> ProcessingStrategy[KafkaPayload]:
        write = RunTask(self._write, CommitOffsets(commit))
        batch = Reduce(self.max_batch_size, self.max_batch_time, collect, Pending, write)
        return RunTask(to_archive_row, batch)


def build_archiver(
    cfg: Config,
    group: str = GROUP,
    topic: str | None = None,
    max_batch_size: int = 50_000,
    max_batch_time: float = 10.0,
    session_timeout_ms: int = 45_000,
    watch: GroupWatch | None = None,
) -> tuple[StreamProcessor[KafkaPayload], ArchiverFactory]:
    """A ready-to-run arroyo processor writing ``topic`` (default: events) to the archive.

    Its ``run()`` also returns, without a signal, when ``watch`` (default: a
    :class:`~footfall.kafka_client.GroupWatch` with its default limit) finds the consumer
    stuck outside its group: the caller then builds a new processor."""
    archive = Archive.from_config(cfg)
    archive.sweep_temporary()
    watch = watch or GroupWatch()
    consumer = group_consumer(cfg, group, session_timeout_ms, watch)
    factory = ArchiverFactory(archive, max_batch_size, max_batch_time)
    processor = StreamProcessor(consumer, Topic(topic or cfg.events_topic), factory, ONCE_PER_SECOND)
    # A consumer that cannot get back into its group ends run(); the caller builds a new one.
    watch.on_stuck = processor.signal_shutdown
    return processor, factory
