"""Realtime worker benchmark: Kafka consume ceiling vs the worker path, Redis round trips per
batch, and event → visible-counter latency at half load.

Usage, from the repository root with a stack's environment set (``eval "$(python -m
deploy.local.stack env)"`` after ``stack start redis mongo kafka``)::

    python -m bench.realtime_bench [--events 100000] [--dup-rate 0.05] [--rounds 2] [--bare-batch 1000]
        [--no-arroyo-round] [--no-floor-rounds] [--latency-seconds 30] [--latency-load 0.5 | --latency-rate EPS]
        [--marker-ms 100] [--poll-ms 5] [--timeout 300] [--seed 42] [--out artifacts/bench/realtime.json]

A fresh 6-partition topic gets ``--events`` DemoTraffic page views (site id unique to the run,
times within the last hour) plus ``--dup-rate`` of them again, shuffled. ``--rounds`` times in
turn: a bare confluent_kafka loop (own group, ``consume(--bare-batch)``, no decoding) reads it
all; the same loop decoding every message and doing nothing else, once with the real decoder and
once with the cheapest decoder of the fields a worker counts (the floors: no worker that reads
its events can be faster; ``--no-floor-rounds`` skips them); the real processor of
``realtime.consumer.build_processor`` (fresh group, in a thread) runs once with a store that
writes nothing (``arroyo``: the framework, decoding and batching alone; ``--no-arroyo-round``
skips it) and once with the real store (``worker``), wrapped to observe ``apply``, until its
offsets reach the end offsets (in Redis for the worker). Steady-state rates (after the first
chunk: group join left out for all), medians reported, with the CPU time of the consuming Python
thread per event (steadier than rates on a shared machine). Latency: a ``manage.py
run_realtime`` subprocess on a second topic, load at ``--latency-load`` x the worker rate, a
marker event (type ``lat-<n>``) every ``--marker-ms`` read back by a pipelined HMGET every
``--poll-ms``. Prints a table with goals (ratio ≥ 0.50, 1 round trip per batch, p99 ≤ 2 s),
writes JSON to ``--out``; exits 0 even when a goal is missed, 1 when the benchmark failed.
Removes its topics, worker and Redis keys at the end (the worker's output:
artifacts/bench/realtime-worker.log); the running totals in ``ff:rt:stats`` keep the run's
increments.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec
import redis
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from footfall.config import load_config
from footfall.demo import DemoTraffic
from footfall.kafka_client import consumer_config
from footfall_capture.events import Event, decode, encode
from footfall_capture.kafka import producer_config
from query.realtime import RealtimeQueries
from realtime.aggregate import aggregate
from realtime.consumer import build_processor
from realtime.keys import PREFIX, KeyLayout
from realtime.store import APPLY, ApplyResult, CounterStore

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "artifacts" / "bench"
PARTITIONS = 6
ID_PREFIX = b'{"event_id":"'  # msgspec writes struct fields in order: every payload starts so
GOALS = {"ratio": 0.50, "round_trips": 1, "p99_s": 2.0}
# librdkafka's local queue must hold a whole pre-produced stream (its default is 100,000 messages).
PRODUCER = {"queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_000_000}


class _CountedUa(msgspec.Struct):
    browser: str | None = None
    os: str | None = None
    device: str | None = None
    is_bot: bool = False


class _CountedUtm(msgspec.Struct):
    source: str | None = None
    medium: str | None = None
    campaign: str | None = None


class _Counted(msgspec.Struct):
    """Only the fields ``realtime.aggregate`` reads, unvalidated: msgspec skips the others
    without building them. The cheapest decode any worker that counts these events could do."""

    event_id: str
    site_id: str
    type: str
    ts: int
    path: str | None = None
    referrer: str | None = None
    ref_domain: str | None = None
    ref_type: str | None = None
    utm: _CountedUtm | None = None
    visitor_id: str | None = None
    ua: _CountedUa | None = None
    country: str | None = None


# The floor rounds: the bare loop plus a decode of every message, nothing else (see bare_round).
FLOORS: dict[str, Callable[[bytes], object]] = {
    "bare+min-decode": msgspec.json.Decoder(_Counted).decode,
    "bare+decode": decode,
}


class BenchError(RuntimeError):
    """The benchmark itself failed (as opposed to a goal being missed)."""


def round_stats(
    kind: str, messages: int, wall_s: float, steady_s: float, steady_messages: int, steady_cpu_s: float
) -> dict[str, Any]:
    """Rates of one round; steady = after the first chunk (batch), wall = from the start. CPU: of
    the consuming Python thread only (librdkafka's own threads are left out for both kinds)."""
    if steady_messages <= 0 or steady_s <= 0:  # a single chunk: no steady part to time
        steady_messages, steady_s = messages, wall_s
    return {"kind": kind, "wall_s": round(wall_s, 3), "wall_eps": round(messages / wall_s),
            "steady_eps": round(steady_messages / steady_s),
            "cpu_us_per_event": round(1e6 * steady_cpu_s / steady_messages, 2)}  # fmt: skip


def make_stream(site: str, n: int, dup_rate: float, seed: int) -> list[tuple[bytes, bytes]]:
    """``(key, payload)`` of ``n`` distinct page views over the last hour plus ``dup_rate`` x n
    repeats (retried beacons), shuffled, keyed by visitor as the collector keys them."""
    now = int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, visitors=3000, seed=seed)
    distinct = [gen.event(now - 3_600_000 + i * 3_600_000 // n) for i in range(n)]
    rng = random.Random(seed)  # synthetic traffic, not security
    stream = distinct + rng.sample(distinct, int(n * dup_rate))
    rng.shuffle(stream)
    return [((e.visitor_id or e.event_id).encode(), encode(e)) for e in stream]


def quietly(action: Callable[[], object], what: str) -> None:
    """Run a cleanup step; a failure is reported but must not hide the results or other steps."""
    try:
        action()
    except Exception as exc:
        print(f"warning: could not {what}: {exc}", file=sys.stderr)


class ObservedStore(CounterStore):
    """The real store, recording each batch (events incl. repeats the worker left out,
    ``ApplyResult.round_trips``, commands its client really sent, seconds, end time, thread CPU
    time at the end) and noticing when the offsets it records reach the topic's end, so the
    clock stops without polling Redis (which would disturb the measurement). With ``write``
    false nothing is sent to Redis: the worker minus the store, i.e. arroyo, decoding and batching."""

    def __init__(self, client: redis.Redis, layout: KeyLayout, want: Mapping[str, int], write: bool = True) -> None:
        super().__init__(client, layout)
        self.write = write
        self.batches: list[tuple[int, int, int, float, float, float]] = []
        self.done, self.want, self._reached, self._commands = threading.Event(), want, dict[str, int](), 0
        send = client.execute_command  # every non-pipelined command (EVALSHA, HINCRBY...) passes here

        def counting(*args: Any, **kwargs: Any) -> Any:
            self._commands += 1
            return send(*args, **kwargs)

        client.execute_command = counting

    def apply(
        self,
        events: Iterable[Event],
        now_ms: int,
        offsets: Mapping[str, int] | None = None,
        group: str = "realtime",
        known_duplicates: int = 0,
    ) -> ApplyResult:
        events = list(events)
        commands, started = self._commands, time.perf_counter()
        if self.write:
            result = super().apply(events, now_ms, offsets, group, known_duplicates)
        else:
            result = ApplyResult(counted=len(events), duplicates=known_duplicates, late=0, round_trips=0)
        ended, cpu = time.perf_counter(), time.thread_time()  # apply runs in the worker's thread
        n = len(events) + known_duplicates  # the batch as the worker received it
        self.batches.append((n, result.round_trips, self._commands - commands, ended - started, ended, cpu))
        self._reached.update(offsets or {})
        if all(self._reached.get(k, 0) >= v for k, v in self.want.items()):
            self.done.set()
        return result


class RealtimeBench:
    """One run: its site, topics, consumer groups and clean-up (``cleanup`` undoes them all)."""

    def __init__(self, args: argparse.Namespace, cleanup: contextlib.ExitStack) -> None:
        self.args, self.cleanup, self.cfg = args, cleanup, load_config(os.environ, REPO)
        self.admin = AdminClient({"bootstrap.servers": self.cfg.kafka_bootstrap_servers})
        self.client = redis.Redis.from_url(self.cfg.redis_url, socket_timeout=10)
        self.layout, self.run_id = KeyLayout(self.cfg.realtime_retention_s), uuid.uuid4().hex[:8]
        self.site, self.groups = f"rtbench-{self.run_id}", list[str]()
        self.workers = [f"{socket.gethostname()}:{os.getpid()}"]  # heartbeat ids (the subprocess adds its own)
        cleanup.callback(quietly, self.forget, "remove the run's Redis keys")

    def forget(self) -> None:  # what the run left in Redis
        self.delete_site_keys()
        self.client.delete(*map(self.layout.offsets, self.groups))
        self.client.hdel(self.layout.workers, *self.workers)

    def delete_site_keys(self) -> None:
        """Remove the counters and dedup marks of the site (unique to this run, so only ours)."""
        for pattern in (f"{PREFIX}:{self.site}:*", self.layout.dedup(self.site, "*")):
            keys = list(self.client.scan_iter(match=pattern, count=5000))
            for start in range(0, len(keys), 5000):
                self.client.unlink(*keys[start : start + 5000])

    def create_topic(self, name: str) -> str:
        self.admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=1)])[name].result(30)
        delete = self.admin.delete_topics
        self.cleanup.callback(quietly, lambda: delete([name])[name].result(timeout=30), f"delete topic {name}")
        return name

    def end_offsets(self, topic: str) -> dict[int, int]:
        futures = self.admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)})
        return {tp.partition: future.result(timeout=10).offset for tp, future in futures.items()}

    def bare_round(self, topic: str, total: int, kind: str = "bare") -> dict[str, Any]:
        """Read ``total`` messages with a bare consume loop: what a Python consumer gets from this
        broker on this machine, the ceiling the worker is compared with. A ``kind`` of
        :data:`FLOORS` also decodes each message and does nothing else: the ceiling of any worker
        that reads its events (with the real decoder, or the cheapest one that could count them)."""
        decoder = FLOORS.get(kind)
        consumer = Consumer(consumer_config(self.cfg, f"rtbench-bare-{uuid.uuid4().hex[:8]}"))
        started, count, first_n, first_done, first_cpu = time.perf_counter(), 0, 0, 0.0, 0.0
        try:
            consumer.subscribe([topic])
            while count < total:
                if time.perf_counter() - started > self.args.timeout:
                    raise BenchError(f"bare consumer read {count} of {total} messages in {self.args.timeout:.0f}s")
                messages = consumer.consume(self.args.bare_batch, timeout=0.5)
                if decoder is None:
                    count += sum(1 for m in messages if m.error() is None)
                else:
                    decoded = [decoder(m.value()) for m in messages if m.error() is None]
                    count += len(decoded)
                if count and not first_n:
                    first_done, first_n, first_cpu = time.perf_counter(), count, time.thread_time()
            end, cpu = time.perf_counter(), time.thread_time()
        finally:
            consumer.close()
        return round_stats(kind, count, end - started, end - first_done, count - first_n, cpu - first_cpu)

    def redis_cpu_s(self) -> float:
        """CPU seconds the Redis server has used since it started (user + system, all threads)."""
        cpu = self.client.info("cpu")
        return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])

    def store_floor(self, items: list[tuple[bytes, bytes]], batch_size: int = 5000) -> dict[str, Any]:
        """Redis CPU per event of the writes alone: every batch's aggregated increments, dedup
        marks and expiries sent as plain commands in one MULTI/EXEC pipeline, without the script's
        checks and branching (the cheapest form of these writes), with the events in time order
        (the order that sums best: a batch spans a minute or two, not the topic's whole hour).
        Decoding and aggregating are done first and not timed. Redis runs commands on one thread,
        so ``1 / cpu per event`` is the most events per second any worker keeping these counters
        in one Redis could count."""
        now, layout = int(time.time() * 1000), self.layout
        events = sorted((decode(payload) for _, payload in items), key=lambda e: e.ts)
        batches = [aggregate(events[i : i + batch_size], layout, now) for i in range(0, len(events), batch_size)]
        counted, cpu_before = sum(b.events for b in batches), self.redis_cpu_s()
        started = time.perf_counter()
        for batch in batches:
            pipe = self.client.pipeline(transaction=True)
            for key in batch.dedup_keys:
                pipe.set(key, 1, ex=layout.retention_s, nx=True)
            for (key, member), incr in batch.zincr.items():
                pipe.zincrby(key, incr, member)
            for (key, field), incr in batch.hincr.items():
                pipe.hincrby(key, field, incr)
            for key, members in batch.pfadd.items():
                pipe.pfadd(key, *members)
            for (key, member), score in batch.seen_at.items():
                pipe.zadd(key, {member: score}, gt=True)
            for key, when in batch.expire_at.items():
                pipe.expireat(key, when)
            pipe.execute()
        wall_s, cpu_s = time.perf_counter() - started, self.redis_cpu_s() - cpu_before
        self.delete_site_keys()
        cpu_us = 1e6 * cpu_s / counted
        return {"events": counted, "batches": len(batches), "redis_cpu_us_per_event": round(cpu_us, 2),
                "max_eps": round(1e6 / cpu_us), "wall_s": round(wall_s, 2)}  # fmt: skip

    def script_calls(self) -> tuple[int, int]:
        """Successful calls and microseconds of EVAL + EVALSHA so far (a NOSCRIPT miss is a failed call)."""
        rows = [v for k, v in self.client.info("commandstats").items() if k in {"cmdstat_eval", "cmdstat_evalsha"}]
        return sum(r["calls"] - r.get("failed_calls", 0) for r in rows), sum(r["usec"] for r in rows)

    def worker_round(self, topic: str, ends: Mapping[int, int], write: bool = True) -> dict[str, Any]:
        """Run the real arroyo processor in a thread of a fresh group until its Redis offsets reach
        ``ends``; with ``write`` false, its store writes nothing (kind ``arroyo``: the framework's share)."""
        self.groups.append(group := f"rtbench-worker-{self.run_id}-{len(self.groups)}")
        client = redis.Redis.from_url(self.cfg.redis_url, socket_timeout=10)
        want = {f"{topic}:{p}": end for p, end in ends.items() if end > 0}
        store = ObservedStore(client, self.layout, want, write)
        processor = build_processor(self.cfg, store, group, topic)
        thread = threading.Thread(target=processor.run, name="realtime-worker", daemon=True)
        calls, usec = self.script_calls()
        started = time.perf_counter()
        thread.start()
        while not store.done.wait(0.2) and thread.is_alive() and time.perf_counter() - started < self.args.timeout:
            pass  # a crashed processor ends its thread (arroyo logs the exception)
        processor.signal_shutdown()
        thread.join(30)
        if not store.done.is_set() or thread.is_alive():
            raise BenchError(f"realtime worker did not reach {dict(ends)} and stop in time (see the log above)")
        recorded = client.hgetall(self.layout.offsets(group))
        if write and any(int(recorded.get(k.encode(), 0)) < v for k, v in store.want.items()):
            raise BenchError(f"offsets recorded in Redis {recorded} are short of {store.want}")
        calls1, usec1 = self.script_calls()
        (first, *_), last, total = store.batches, store.batches[-1], sum(ends.values())
        steady_s, steady_cpu = last[4] - first[4], last[5] - first[5]
        kind = "worker" if write else "arroyo"
        stats = round_stats(kind, total, last[4] - started, steady_s, total - first[0], steady_cpu)
        stats["apply_share"] = round(sum(b[3] for b in store.batches) / (last[4] - started), 3)  # aggregate + Redis
        return {"round": stats, "batches": store.batches, "eval_calls": calls1 - calls, "eval_usec": usec1 - usec}

    def poll_markers(self, pending: dict[str, tuple[str, float]], seen: list[float], lock: threading.Lock,
                     stop: threading.Event) -> None:  # fmt: skip
        """Until ``stop``, every ``--poll-ms``: one pipelined HMGET per minute hash holding pending
        markers (one or two hashes); a marker's latency ends when a read returns its field."""
        while not stop.wait(self.args.poll_ms / 1000):
            with lock:
                by_key: dict[str, list[str]] = {}
                for name, (key, _) in pending.items():
                    by_key.setdefault(key, []).append(name)
            if not by_key:
                continue
            pipe = self.client.pipeline(transaction=False)
            for key, names in by_key.items():
                pipe.hmget(key, names)
            replies, now = pipe.execute(), time.perf_counter()
            with lock:
                for names, values in zip(by_key.values(), replies, strict=True):
                    seen += [now - pending.pop(name)[1] for name, value in zip(names, values, strict=True) if value]

    def latency(self, topic: str, load: list[tuple[bytes, bytes]], rate: float) -> dict[str, Any]:
        """Produce ``load`` at ``rate`` plus markers for a ``run_realtime`` subprocess; time the markers."""
        self.groups.append(group := f"rtbench-lat-{self.run_id}")
        log_path, args = OUT_DIR / "realtime-worker.log", self.args
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "manage.py", "run_realtime", "--topic", topic, "--group", group],
                cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self.workers.append(f"{socket.gethostname()}:{proc.pid}")
        self.cleanup.callback(proc.kill)  # runs after the SIGTERM below: only if that did not stop it
        self.cleanup.callback(quietly, lambda: (proc.terminate(), proc.wait(30)), "stop the worker in 30 s")
        pending: dict[str, tuple[str, float]] = {}  # counter field -> (hash key, produce time)
        seen, lock, stop = list[float](), threading.Lock(), threading.Event()
        threading.Thread(target=self.poll_markers, args=(pending, seen, lock, stop), daemon=True).start()
        self.cleanup.callback(stop.set)
        producer = Producer(producer_config(self.cfg.kafka, **PRODUCER))
        gen, numbers = DemoTraffic(site_id=self.site, visitors=3000, seed=7), itertools.count()

        def send_marker() -> None:  # unique n: its field cannot exist before the marker is counted
            event = msgspec.structs.replace(gen.event(int(time.time() * 1000)), type=f"lat-{next(numbers)}")
            key = self.layout.counters(self.site, event.ts // 60_000)
            with lock:
                pending[f"event:{event.type}"] = (key, time.perf_counter())
            producer.produce(topic, encode(event), key=(event.visitor_id or "").encode())

        def drain(timeout: float) -> None:
            deadline = time.monotonic() + timeout
            while pending and time.monotonic() < deadline and proc.poll() is None:
                producer.poll(0.05)

        send_marker()  # warm-up: Django start-up and the group join must not count as latency
        drain(120)
        if pending:
            raise BenchError(f"the run_realtime worker counted no marker within 120 s (log: {log_path})")
        seen.clear()
        started = next_marker = time.perf_counter()
        sent = 0
        while (now := time.perf_counter()) - started < args.latency_seconds:
            while sent < int((now - started) * rate):
                key, payload = load[sent % len(load)]
                if sent >= len(load):  # another pass: fresh ids (first 8 hex digits), same mix of repeats
                    payload = ID_PREFIX + b"%08x" % (sent // len(load)) + payload[len(ID_PREFIX) + 8 :]
                producer.produce(topic, payload, key=key)
                sent += 1
            if now >= next_marker:
                send_marker()
                next_marker += args.marker_ms / 1000
            producer.poll(0)
            time.sleep(0.002)
        produced_s = time.perf_counter() - started
        producer.flush(30)
        drain(15)  # bounded: a marker still unseen after this counts as missed
        stop.set()
        with lock:
            lat, missing, in_order = sorted(seen), len(pending), [round(x, 3) for x in seen]  # order seen, for trends
        if not lat:
            raise BenchError(f"no latency sample (worker log: {log_path})")
        p50, p99 = (lat[min(len(lat) - 1, int(q * len(lat)))] for q in (0.5, 0.99))  # real samples, no interpolation
        return {
            "target_eps": round(rate), "produced_eps": round(sent / produced_s), "seconds": round(produced_s, 1),
            "markers": len(lat) + missing, "missing": missing, "p50_s": round(p50, 3), "p99_s": round(p99, 3),
            "max_s": round(lat[-1], 3), "poll_ms": args.poll_ms, "pass": missing == 0 and p99 <= GOALS["p99_s"],
            "samples_s": in_order,
        }  # fmt: skip

    def run(self) -> dict[str, Any]:
        args, loadavg_start = self.args, os.getloadavg()
        topic = self.create_topic(f"rtbench-{self.run_id}")
        print(f"producing {args.events:,} events (+{args.dup_rate:.0%} repeated ids) to {topic} ...", flush=True)
        items = make_stream(self.site, args.events, args.dup_rate, args.seed)
        producer = Producer(producer_config(self.cfg.kafka, **PRODUCER))
        for key, payload in items:
            producer.produce(topic, payload, key=key)  # the queue holds them all: flush() delivers
        if producer.flush(120):
            raise BenchError("Kafka did not take every event within 120 s")
        if (total := sum((ends := self.end_offsets(topic)).values())) != len(items):
            raise BenchError(f"topic holds {total} messages, {len(items)} were produced")
        rounds, observed, exact = [], [], []
        self.client.script_load(APPLY)  # as a running worker has it: a fresh Redis's NOSCRIPT is no batch's cost
        for _ in range(args.rounds):  # alternate, so drift on a noisy machine hits both alike
            rounds.append(self.bare_round(topic, total))
            if not args.no_floor_rounds:
                rounds += [self.bare_round(topic, total, kind) for kind in FLOORS]
            if not args.no_arroyo_round:
                rounds.append(self.worker_round(topic, ends, write=False)["round"])
            self.delete_site_keys()  # else every batch finds its marks: the duplicate path
            observed.append(self.worker_round(topic, ends))
            rounds.append(observed[-1]["round"])
            now = int(time.time() * 1000)
            totals = RealtimeQueries(CounterStore(self.client, self.layout)).totals(self.site, now - 7_200_000, now)
            exact.append(totals["pageviews"] == args.events)
            this = rounds[-(2 + (not args.no_arroyo_round) + (0 if args.no_floor_rounds else len(FLOORS))) :]
            print(f"round {len(exact)}: " + ", ".join(f"{r['kind']} {r['steady_eps']:,} ev/s" for r in this))

        def median(kind: str, field: str) -> Any:
            values = [r[field] for r in rounds if r["kind"] == kind]
            return statistics.median(values) if values else None

        bare, worker, arroyo = (median(kind, "steady_eps") for kind in ("bare", "worker", "arroyo"))
        bare_cpu, worker_cpu, arroyo_cpu = (median(k, "cpu_us_per_event") for k in ("bare", "worker", "arroyo"))
        bare_cpu, worker_cpu = round(bare_cpu, 2), round(worker_cpu, 2)
        arroyo_cpu = arroyo_cpu and round(arroyo_cpu, 2)
        store_floor = None if args.no_floor_rounds else self.store_floor(items)
        floors = {kind: {"eps": round(eps), "ratio": round(eps / bare, 4),
                         "cpu_us": round(median(kind, "cpu_us_per_event"), 2)}
                  for kind in FLOORS if (eps := median(kind, "steady_eps"))}  # fmt: skip
        rate = args.latency_rate or args.latency_load * worker
        print(f"latency: {rate:,.0f} ev/s for {args.latency_seconds:.0f}s, markers every {args.marker_ms:.0f}ms ...")
        self.delete_site_keys()  # the load reuses the payloads: they must count as new
        latency = self.latency(self.create_topic(f"{topic}-lat"), items, rate)
        batches = [b for w in observed for b in w["batches"]]
        trips, commands = [b[1] for b in batches], [b[2] for b in batches]
        calls, usec = sum(w["eval_calls"] for w in observed), sum(w["eval_usec"] for w in observed)
        return {
            "run": {"site": self.site, "events": args.events, "messages": total, "dup_rate": args.dup_rate,
                    "rounds": args.rounds, "host": socket.gethostname(), "cpus": os.cpu_count(),
                    "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "loadavg_start": loadavg_start,
                    "loadavg_end": os.getloadavg()},
            "throughput": {"rounds": rounds, "bare_eps": round(bare), "worker_eps": round(worker),
                           "ratio": round(worker / bare, 4), "pass": worker / bare >= GOALS["ratio"],
                           "arroyo_eps": arroyo and round(arroyo), "arroyo_cpu_us": arroyo_cpu,
                           "bare_cpu_us": bare_cpu, "worker_cpu_us": worker_cpu,
                           "cpu_ratio": round(bare_cpu / worker_cpu, 4),
                           "apply_share": median("worker", "apply_share"),
                           "counts_exact": exact, "floors": floors, "store_floor": store_floor},
            "round_trips": {"batches": len(batches), "mean": round(statistics.mean(trips), 3), "max": max(trips),
                            "commands_mean": round(statistics.mean(commands), 3),
                            "commands_max": max(commands), "sum_round_trips": sum(trips), "eval_calls": calls,
                            "redis_ms_per_script": round(usec / max(calls, 1) / 1000, 2),
                            "apply_ms_mean": round(1000 * statistics.mean(b[3] for b in batches), 1),
                            "events_per_batch_mean": round(statistics.mean(b[0] for b in batches)),
                            "pass": max(*trips, *commands) <= GOALS["round_trips"]},
            "latency": latency, "goals": GOALS,
        }  # fmt: skip


def print_table(res: dict[str, Any]) -> None:
    t, rt, lat, ok = res["throughput"], res["round_trips"], res["latency"], {True: "PASS", False: "FAIL"}
    run = res["run"]
    print(f"\nrealtime bench: {run['messages']:,} messages, site {run['site']}, {run['cpus']} CPUs, load average "
          f"{run['loadavg_start'][0]:.1f} at the start, {run['loadavg_end'][0]:.1f} at the end")  # fmt: skip
    for name, value, goal, verdict in [
        ("metric", "measured", "goal", "result"),
        ("events/s bare consume / worker (medians)", f"{t['bare_eps']:,} / {t['worker_eps']:,}", "", ""),
        ("throughput ratio worker / bare", f"{t['ratio']:.4f}", f">= {GOALS['ratio']:.2f}", ok[t["pass"]]),
        ("  arroyo + decode, no Redis (ev/s, / bare)",
         f"{t['arroyo_eps']:,} ({t['arroyo_eps'] / t['bare_eps']:.4f})" if t["arroyo_eps"] else "not run", "", ""),
        *[(f"  {kind}: ev/s (/ bare), CPU us/event", f"{f['eps']:,} ({f['ratio']:.4f}), {f['cpu_us']}", "", "")
          for kind, f in t["floors"].items()],
        *[("  Redis CPU us/event of the writes alone, max ev/s (/ bare)",
           f"{sf['redis_cpu_us_per_event']}, {sf['max_eps']:,} ({sf['max_eps'] / t['bare_eps']:.4f})", "", "")
          for sf in [t["store_floor"]] if sf],
        ("  CPU us/event of consuming thread b / a / w",
         f"{t['bare_cpu_us']} / {t['arroyo_cpu_us'] or '-'} / {t['worker_cpu_us']}", "", ""),
        ("  CPU ratio bare / worker (as if alone)", f"{t['cpu_ratio']:.4f}", "", ""),
        ("  worker time in store.apply (aggregate+Redis)", f"{t['apply_share']:.0%}", "", ""),
        ("Redis round trips per batch, mean / max", f"{rt['mean']:.2f} / {rt['max']}", "= 1", ok[rt["pass"]]),
        ("  commands really sent per batch, mean / max", f"{rt['commands_mean']:.2f} / {rt['commands_max']}", "", ""),
        ("  EVAL(SHA) calls (INFO) / sum of round trips", f"{rt['eval_calls']} / {rt['sum_round_trips']}", "", ""),
        ("  batches: count, events, apply ms, script ms", f"{rt['batches']}, {rt['events_per_batch_mean']}, "
         f"{rt['apply_ms_mean']}, {rt['redis_ms_per_script']}", "", ""),
        (f"latency p50 / p99 at {lat['produced_eps']:,} ev/s", f"{lat['p50_s']:.3f}s / {lat['p99_s']:.3f}s",
         f"p99 <= {GOALS['p99_s']:.0f}s", ok[lat["pass"]]),
        ("  markers missed / sent, max latency", f"{lat['missing']} / {lat['markers']}, {lat['max_s']:.3f}s", "", ""),
        ("counts exact after each worker round", str(t["counts_exact"]), "all True", ok[all(t["counts_exact"])]),
    ]:  # fmt: skip
        print(f"{name:<46} {value:>26}  {goal:<10} {verdict}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.realtime_bench", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--events", type=int, default=100_000, help="distinct events produced (default 100000)")
    add("--dup-rate", type=float, default=0.05, help="repeated ids as a fraction of --events (default 0.05)")
    add("--seed", type=int, default=42, help="DemoTraffic seed")
    add("--rounds", type=int, default=2, help="bare/worker pairs; medians are reported (default 2)")
    add("--bare-batch", type=int, default=1000, help="messages per consume() call of the bare loop")
    add("--no-arroyo-round", action="store_true", help="skip the worker-without-Redis round (the framework's share)")
    add("--no-floor-rounds", action="store_true", help="skip the bare-loop-plus-decode rounds (the decode floor)")
    add("--latency-seconds", type=float, default=30.0, help="duration of the latency load (default 30)")
    add("--latency-load", type=float, default=0.5, help="latency load as a fraction of the worker rate")
    add("--latency-rate", type=float, default=None, help="latency load in events/s (overrides --latency-load)")
    add("--marker-ms", type=float, default=100.0, help="one marker event every this many ms (default 100)")
    add("--poll-ms", type=float, default=5.0, help="marker read interval in ms (default 5)")
    add("--timeout", type=float, default=300.0, help="limit of each consume round in seconds (default 300)")
    add("--out", type=Path, default=OUT_DIR / "realtime.json", help="JSON results (default %(default)s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # KeyboardInterrupt: clean up as for Ctrl-C
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    try:
        with contextlib.ExitStack() as cleanup:
            results = RealtimeBench(args, cleanup).run()
    except (BenchError, KafkaException, BufferError, redis.RedisError, OSError) as exc:
        print(f"realtime bench failed: {exc!r}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    print_table(results)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
