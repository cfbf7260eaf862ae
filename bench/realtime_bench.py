"""Realtime worker benchmark: today's worker (a ``git worktree`` of ``--baseline``) against this checkout's, side
by side on one topic and one Redis, each a ``manage.py run_realtime`` process; the Redis floor of each one's key
layout, Redis round trips per batch, exact counts, and event -> counter latency at half the new worker's rate.
Goals: new / old >= 4, new / its floor >= 0.5, 1 round trip per batch, p99 <= 2 s. Usage and figures:
bench/README.md."""

from __future__ import annotations

import argparse
import contextlib
import itertools
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import redis
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from bench.harness import OUT, REPO, BenchError, columns, cpu_seconds, machine, run_main, unlink_matching
from bench.trees import Tree, baseline_tree, current_tree, editable_roots, worktrees
from footfall.config import load_config
from footfall.demo import DemoTraffic
from footfall.kafka_client import consumer_config
from footfall_capture.events import encode
from footfall_capture.kafka import client_config, producer_config

PARTITIONS, DUP_RATE, SEED, BARE_BATCH, MARKER_S, POLL_S, TIMEOUT_S = 6, 0.05, 42, 1000, 0.1, 0.005, 300.0
PROGRESS_S = 0.05  # how often a worker round reads the offsets the worker recorded and Redis's CPU
BASELINE = "947ce25"  # today's worker when issue 29 was filed
ID_PREFIX = b'{"event_id":"'  # msgspec writes struct fields in order: every payload starts so
GOALS = {"speedup": 4.0, "floor_ratio": 0.5, "steps_per_batch": 1.0, "p99_s": 2.0}
LATENCY_LOAD = 0.5  # latency at half the new worker's rate
# librdkafka's local queue must hold a whole pre-produced stream (its default is 100,000 messages).
PRODUCER = {"queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_000_000}
# The keys both key layouts share, which is all the bench reads (no product code decides what it measures).
COUNTERS, OFFSETS, WORKERS = "ff:rt:{site}:{minute}:c", "ff:rt:offsets:{group}", "ff:rt:workers"
EVENTS = "ff:rt:{site}:{minute}:top:event"  # custom events per name (realtime.keys, Custom events)
# One call is one round trip carrying a whole atomic step: a script, a function, or a MULTI ... EXEC.
ATOMIC = ("eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro", "exec")
# The new worker's rounds keep every top-level call in Redis's slow log (restored after), to tell its background
# merges from its batches: a merge step's first argument is an hour's marker (realtime.keys, Value hours).
EVERY_CALL = {"slowlog-log-slower-than": "0", "slowlog-max-len": "1000000"}
MERGE_MARKER = b":merged"


@dataclass(frozen=True, slots=True)
class Progress:
    """One look at a worker round: when, events the worker recorded as done, CPU seconds of Redis and the worker."""

    t: float
    done: int
    redis_cpu: float
    worker_cpu: float


def done_events(offsets: Mapping[bytes | str, bytes | str], topic: str) -> int:
    """Messages of ``topic`` below the next offsets a worker recorded (``{topic}:{partition}`` -> next offset)."""
    total = 0
    for name, offset in offsets.items():
        name = name.decode() if isinstance(name, bytes) else name
        if name.rpartition(":")[0] == topic:
            total += int(offset)
    return total


def redis_cpu(info: Mapping[str, Any]) -> float:
    """Redis's own CPU seconds from ``INFO cpu``: its main thread where Redis reports it, else the process."""
    if "used_cpu_user_main_thread" in info:
        return float(info["used_cpu_user_main_thread"]) + float(info["used_cpu_sys_main_thread"])
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def command_calls(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, int]:
    """Successful calls per command between two ``INFO commandstats`` (``cmdstat_x`` -> ``{calls: ...}``), nonzero
    only. Failed and rejected calls are left out: a NOSCRIPT answer, once per worker process, is no batch's."""

    def ok(stats: Mapping[str, Any]) -> int:
        return int(stats.get("calls", 0)) - int(stats.get("failed_calls", 0)) - int(stats.get("rejected_calls", 0))

    delta = {}
    for key, stats in after.items():
        if calls := ok(stats) - ok(before.get(key, {})):
            delta[key.removeprefix("cmdstat_")] = calls
    return delta


@contextlib.contextmanager
def every_call_logged(client: redis.Redis) -> Iterator[Callable[[], list[Any]]]:
    """Redis's slow log holds every top-level call while the block runs (its settings restored after); yields a
    reader of its raw entries (``[id, time, duration, [args...], ...]``, at most 32 arguments each)."""
    saved = {name: client.config_get(name)[name] for name in EVERY_CALL}
    client.slowlog_reset()
    try:
        for name, value in EVERY_CALL.items():
            client.config_set(name, value)
        # As one "SLOWLOG" command redis-py applies no reply parser: the arguments stay a list.
        yield lambda: client.execute_command("SLOWLOG", "GET", "-1")
    finally:
        for name, value in saved.items():
            client.config_set(name, value)
        client.slowlog_reset()


def merge_steps(entries: Sequence[Any]) -> int:
    """The value-hour merge steps among raw slow-log entries: script calls whose first argument after the keys
    names an hour's merge marker."""
    steps = 0
    for entry in entries:
        args = entry[3]
        if len(args) < 3 or args[0].lower() not in (b"eval", b"evalsha") or not args[2].isdigit():
            continue
        first = 3 + int(args[2])
        steps += first < len(args) and args[first].endswith(MERGE_MARKER)
    return steps


def batches_at_least(progress: Sequence[Progress], total: int, batch_size: int | None) -> int:
    """A lower bound of the batches a worker wrote: the recorded offsets grew this many times between looks, and no
    batch holds more than ``batch_size`` events. Atomic steps / this is at least the steps per batch."""
    grew = sum(1 for before, after in itertools.pairwise(progress) if after.done > before.done)
    grew += bool(progress and progress[0].done > 0)
    return max(grew, -(-total // batch_size) if batch_size else 0)


def steady(progress: Sequence[Progress], total: int) -> dict[str, float] | None:
    """The steady part of a worker round: from the first look at a recorded offset (the group join and start-up
    left out) to the first look at ``total`` done. Rate, Redis CPU per event and its floor, worker CPU per
    event; None when a single step did everything (nothing steady to time)."""
    first = next((p for p in progress if p.done > 0), None)
    last = next((p for p in progress if p.done >= total), None)
    if first is None or last is None or last.t <= first.t or last.done <= first.done:
        return None
    events, seconds = last.done - first.done, last.t - first.t
    redis_us = 1e6 * (last.redis_cpu - first.redis_cpu) / events
    return {
        "events": events, "seconds": round(seconds, 3), "eps": round(events / seconds),
        "redis_us_per_event": round(redis_us, 3), "floor_eps": round(1e6 / redis_us) if redis_us > 0 else None,
        "floor_ratio": round(events / seconds * redis_us / 1e6, 4),
        "worker_cpu_us_per_event": round(1e6 * (last.worker_cpu - first.worker_cpu) / events, 2),
    }  # fmt: skip


def round_stats(kind: str, messages: int, wall_s: float, steady_s: float, steady_messages: int, cpu_s: float) -> dict:
    """Rates of a bare round: steady after its first chunk, wall from its start; CPU of the consuming thread."""
    if steady_messages <= 0 or steady_s <= 0:  # a single chunk: no steady part to time
        steady_messages, steady_s = messages, wall_s
    return {"kind": kind, "wall_s": round(wall_s, 3), "wall_eps": round(messages / wall_s),
            "steady_eps": round(steady_messages / steady_s),
            "cpu_us_per_event": round(1e6 * cpu_s / steady_messages, 2)}  # fmt: skip


def make_stream(site: str, n: int, dup_rate: float, seed: int, now_ms: int) -> list[tuple[bytes, bytes]]:
    """``(key, payload)`` of ``n`` page views over the hour before ``now_ms`` and ``dup_rate`` x n repeats,
    shuffled, keyed by visitor."""
    gen = DemoTraffic(site_id=site, visitors=3000, seed=seed)
    distinct = [gen.event(now_ms - 3_600_000 + i * 3_600_000 // n) for i in range(n)]
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


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """SIGTERM (a worker writes and commits its batch first), then SIGKILL; idempotent."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(5)


def worker_log(tree: Tree) -> Path:
    return OUT / f"realtime-worker-{tree.label}.log"


class RealtimeBench:
    """One run: its trees, site, topics, consumer groups, workers and clean-up (``cleanup`` undoes them all)."""

    def __init__(self, args: argparse.Namespace, cleanup: contextlib.ExitStack) -> None:
        self.args, self.cleanup, self.cfg = args, cleanup, load_config(os.environ, REPO)
        self.admin = AdminClient(client_config(self.cfg.kafka))
        self.client = redis.Redis.from_url(self.cfg.redis_url, socket_timeout=10)
        self.run_id = uuid.uuid4().hex[:8]
        self.site, self.groups, self.workers = f"rtbench-{self.run_id}", list[str](), list[str]()
        self.minutes = range(0)
        cleanup.callback(quietly, self.forget, "remove the run's Redis keys")

    def forget(self) -> None:  # what the run left in Redis
        self.delete_site_keys()
        if self.groups:
            self.client.delete(*(OFFSETS.format(group=g) for g in self.groups))
        if self.workers:
            self.client.hdel(WORKERS, *self.workers)

    def delete_site_keys(self) -> None:
        """Remove every key naming the site (unique to this run): counters and dedup marks of either layout."""
        unlink_matching(self.client, f"ff:rt:*{self.site}*")

    def create_topic(self, name: str) -> str:
        self.admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=1)])[name].result(30)
        delete = self.admin.delete_topics
        self.cleanup.callback(quietly, lambda: delete([name])[name].result(timeout=30), f"delete topic {name}")
        return name

    def trees(self) -> tuple[Tree, Tree]:
        """The baseline's worktree and this checkout, each proven to import only its own code."""
        new, old = current_tree("new"), baseline_tree(self.args.baseline, self.cleanup, "old")
        checkouts = {*editable_roots(os.environ), *worktrees()}  # every checkout a worker could import from
        for tree in (old, new):
            tree.verify(os.environ, checkouts, "realtime", "run_realtime")
            worker_log(tree).write_bytes(b"")  # this run's only
            print(f"{tree.label}: {tree.rev}{' (uncommitted changes)' if tree.dirty else ''} in {tree.root}, "
                  f"imports only its own code; batch size {tree.batch_size}", flush=True)  # fmt: skip
        return old, new

    def start_worker(self, tree: Tree, topic: str, group: str) -> subprocess.Popen[bytes]:
        """``manage.py run_realtime --topic --group`` of ``tree``, in its own session, logging to a file."""
        with worker_log(tree).open("ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "manage.py", "run_realtime", "--topic", topic, "--group", group],
                cwd=tree.root, env=tree.env(os.environ), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self.workers.append(f"{socket.gethostname()}:{proc.pid}")
        self.cleanup.callback(quietly, lambda: stop_process(proc), f"stop worker {proc.pid}")
        return proc

    def bare_round(self, topic: str, total: int) -> dict[str, Any]:
        """Read ``total`` messages in a bare consume loop: what a Python consumer gets (a reference)."""
        consumer = Consumer(consumer_config(self.cfg, f"rtbench-bare-{uuid.uuid4().hex[:8]}"))
        started, count, first_n, first_done, first_cpu = time.perf_counter(), 0, 0, 0.0, 0.0
        try:
            consumer.subscribe([topic])
            while count < total:
                if time.perf_counter() - started > TIMEOUT_S:
                    raise BenchError(f"bare consumer read {count} of {total} messages in {TIMEOUT_S:.0f}s")
                count += sum(1 for m in consumer.consume(BARE_BATCH, timeout=0.5) if m.error() is None)
                if count and not first_n:
                    first_done, first_n, first_cpu = time.perf_counter(), count, time.thread_time()
            end, cpu = time.perf_counter(), time.thread_time()
        finally:
            consumer.close()
        return round_stats("bare", count, end - started, end - first_done, count - first_n, cpu - first_cpu)

    def pageviews(self) -> int:
        """Page views in the site's minute hashes over the stream's hour."""
        pipe = self.client.pipeline(transaction=False)
        for minute in self.minutes:
            pipe.hget(COUNTERS.format(site=self.site, minute=minute), "pageviews")
        return sum(int(v or 0) for v in pipe.execute())

    def worker_round(self, tree: Tree, topic: str, total: int) -> dict[str, Any]:
        """Run ``tree``'s worker in a fresh group on cleared keys until the offsets it records reach the end."""
        self.groups.append(group := f"rtbench-{tree.label}-{self.run_id}-{len(self.groups)}")
        self.delete_site_keys()  # else every event finds its dedup mark: the duplicate path
        watch = every_call_logged(self.client) if tree.label == "new" else contextlib.nullcontext(lambda: [])
        with watch as logged:
            before, started = self.client.info("commandstats"), time.perf_counter()
            proc, progress, key = self.start_worker(tree, topic, group), list[Progress](), OFFSETS.format(group=group)
            while not progress or progress[-1].done < total:
                if proc.poll() is not None:
                    raise BenchError(f"the {tree.label} worker exited ({proc.returncode}), log: {worker_log(tree)}")
                if time.perf_counter() - started > TIMEOUT_S:
                    raise BenchError(f"the {tree.label} worker did {progress[-1].done if progress else 0} of {total}")
                time.sleep(PROGRESS_S)
                pipe = self.client.pipeline(transaction=False)
                offsets, cpu = pipe.hgetall(key).info("cpu").execute()
                now = time.perf_counter()
                progress.append(Progress(now, done_events(offsets, topic), redis_cpu(cpu), cpu_seconds(proc.pid)))
            wall_s, calls = time.perf_counter() - started, command_calls(before, self.client.info("commandstats"))
            merges = merge_steps(logged())
        stop_process(proc)
        part = steady(progress, total)
        if part is None:
            raise BenchError(f"the {tree.label} worker did all {total} in one step: nothing steady to time")
        steps, batches = sum(calls.get(c, 0) for c in ATOMIC), batches_at_least(progress, total, tree.batch_size)
        batch_steps = steps - merges  # a merge landing between two looks is no batch's step
        pageviews = self.pageviews()
        return {"kind": tree.label, "group": group, "wall_s": round(wall_s, 3), "steady_eps": part["eps"], **part,
                "atomic_steps": steps, "steps_per_1000": round(1000 * steps / total, 3),
                "merge_steps": merges, "batches_at_least": batches, "steps_per_batch": round(batch_steps / batches, 3),
                "looks": len(progress),
                "pageviews": pageviews, "exact": pageviews == self.args.events,
                "commands": dict(sorted(calls.items(), key=lambda kv: -kv[1]))}  # fmt: skip

    def poll_markers(self, pending: dict[str, tuple[int, float]], seen: list[float], lock: threading.Lock,
                     stop: threading.Event) -> None:  # fmt: skip
        """Every ``POLL_S``, one pipeline over the pending markers; a marker (a custom event of a
        name of its own) is seen once its minute counts it: as the ``event:<name>`` field of the
        minute's hash (workers before issue 31) or in the minute's ``event`` ranking (since)."""
        while not stop.wait(POLL_S):
            with lock:
                markers = [(name, minute) for name, (minute, _) in pending.items()]
            if not markers:
                continue
            pipe = self.client.pipeline(transaction=False)
            for name, minute in markers:
                pipe.hget(COUNTERS.format(site=self.site, minute=minute), f"event:{name}")
                pipe.zscore(EVENTS.format(site=self.site, minute=minute), name)
            replies, now = pipe.execute(), time.perf_counter()
            with lock:
                for k, (name, _) in enumerate(markers):
                    if replies[2 * k] is not None or replies[2 * k + 1] is not None:
                        seen.append(now - pending.pop(name)[1])

    def latency(self, tree: Tree, topic: str, load: list[tuple[bytes, bytes]], rate: float) -> dict[str, Any]:
        """Produce ``load`` at ``rate`` plus markers for ``tree``'s worker; time the markers."""
        self.groups.append(group := f"rtbench-lat-{self.run_id}")
        proc, args = self.start_worker(tree, topic, group), self.args
        pending: dict[str, tuple[int, float]] = {}  # marker name -> (its minute, produce time)
        seen, lock, stop = list[float](), threading.Lock(), threading.Event()
        threading.Thread(target=self.poll_markers, args=(pending, seen, lock, stop), daemon=True).start()
        self.cleanup.callback(stop.set)
        producer = Producer(producer_config(self.cfg.kafka, **PRODUCER))
        gen, numbers = DemoTraffic(site_id=self.site, visitors=3000, seed=7), itertools.count()

        def send_marker() -> None:  # unique n: its field cannot exist before the marker is counted
            event = msgspec.structs.replace(gen.event(int(time.time() * 1000)), type=f"lat-{next(numbers)}")
            with lock:
                pending[event.type] = (event.ts // 60_000, time.perf_counter())
            producer.produce(topic, encode(event), key=(event.visitor_id or "").encode())

        def drain(timeout: float) -> bool:  # whether every marker was seen
            deadline = time.monotonic() + timeout
            while pending and time.monotonic() < deadline and proc.poll() is None:
                producer.poll(0.05)
            return not pending

        send_marker()  # warm-up: Django start-up and the group join must not count as latency
        if not drain(120):
            raise BenchError(f"the {tree.label} worker counted no marker within 120 s, log: {worker_log(tree)}")
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
                next_marker += MARKER_S
            producer.poll(0)
            time.sleep(0.002)
        produced_s = time.perf_counter() - started
        producer.flush(30)
        drain(15)  # bounded: a marker still unseen after this counts as missed
        stop.set()
        stop_process(proc)
        with lock:
            lat, missing, in_order = sorted(seen), len(pending), [round(x, 3) for x in seen]  # order seen, for trends
        if not lat:
            raise BenchError(f"no latency sample, log: {worker_log(tree)}")
        p50, p99 = (lat[min(len(lat) - 1, int(q * len(lat)))] for q in (0.5, 0.99))  # real samples, no interpolation
        return {
            "worker": tree.label, "target_eps": round(rate), "produced_eps": round(sent / produced_s),
            "seconds": round(produced_s, 1), "markers": len(lat) + missing, "missing": missing,
            "p50_s": round(p50, 3), "p99_s": round(p99, 3), "max_s": round(lat[-1], 3), "poll_ms": POLL_S * 1000,
            "pass": missing == 0 and p99 <= GOALS["p99_s"], "samples_s": in_order,
        }  # fmt: skip

    def produce(self, topic: str) -> tuple[list[tuple[bytes, bytes]], int]:
        """Pre-produce the stream; its items and the number of messages on the topic."""
        now = int(time.time() * 1000)
        items = make_stream(self.site, self.args.events, DUP_RATE, SEED, now)
        self.minutes = range((now - 3_600_000) // 60_000, now // 60_000 + 1)
        producer = Producer(producer_config(self.cfg.kafka, **PRODUCER))
        for key, payload in items:
            producer.produce(topic, payload, key=key)  # the queue holds them all: flush() delivers
        if producer.flush(120):
            raise BenchError("Kafka did not take every event within 120 s")
        futures = self.admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)})
        total = sum(future.result(timeout=10).offset for future in futures.values())
        if total != len(items):
            raise BenchError(f"topic holds {total} messages, {len(items)} were produced")
        return items, total

    def run(self) -> dict[str, Any]:
        args, loadavg_start = self.args, os.getloadavg()
        old, new = self.trees()
        topic = self.create_topic(f"rtbench-{self.run_id}")
        print(f"producing {args.events:,} events (+{DUP_RATE:.0%} repeated ids) to {topic} ...", flush=True)
        items, total = self.produce(topic)
        rounds: list[dict[str, Any]] = []
        for n in range(args.rounds):  # alternate, so drift on a noisy machine hits both alike
            rounds.append(self.bare_round(topic, total))
            for tree in (old, new) if n % 2 == 0 else (new, old):
                rounds.append(self.worker_round(tree, topic, total))
            print(f"round {n + 1}: " + ", ".join(f"{r['kind']} {r['steady_eps']:,} ev/s" for r in rounds[-3:]))
        by_kind = {kind: [r for r in rounds if r["kind"] == kind] for kind in ("bare", "old", "new")}

        def median(kind: str, field: str) -> float:
            return float(statistics.median(r[field] for r in by_kind[kind] if r[field] is not None))

        speedups = [n["steady_eps"] / o["steady_eps"] for o, n in zip(by_kind["old"], by_kind["new"], strict=True)]
        workers = {
            kind: {"eps": round(median(kind, "steady_eps")), "redis_us_per_event": median(kind, "redis_us_per_event"),
                   "floor_eps": round(median(kind, "floor_eps")), "floor_ratio": median(kind, "floor_ratio"),
                   "worker_cpu_us_per_event": median(kind, "worker_cpu_us_per_event"),
                   "bare_ratio": round(median(kind, "steady_eps") / median("bare", "steady_eps"), 4),
                   "steps_per_1000": median(kind, "steps_per_1000"),
                   "steps_per_batch": max(r["steps_per_batch"] for r in by_kind[kind]),
                   "merge_steps": max(r["merge_steps"] for r in by_kind[kind]),
                   "counts_exact": [r["exact"] for r in by_kind[kind]],
                   "tree": {"rev": tree.rev, "root": str(tree.root), "dirty": tree.dirty,
                            "batch_size": tree.batch_size}}
            for kind, tree in (("old", old), ("new", new))
        }  # fmt: skip
        rate = LATENCY_LOAD * workers["new"]["eps"]
        print(f"latency: {rate:,.0f} ev/s for {args.latency_seconds:.0f}s, markers every {MARKER_S * 1000:.0f}ms ...")
        self.delete_site_keys()  # the load reuses the payloads: they must count as new
        latency = self.latency(new, self.create_topic(f"{topic}-lat"), items, rate)
        speedup, floor_ratio = statistics.median(speedups), workers["new"]["floor_ratio"]
        # On a shared machine a worker gets part of a CPU: its CPU per event says what it would do alone.
        cpu_ratio = workers["old"]["worker_cpu_us_per_event"] / workers["new"]["worker_cpu_us_per_event"]
        exact = all(r["exact"] for r in rounds if r["kind"] != "bare")
        return {
            "run": {"site": self.site, "events": args.events, "messages": total, "dup_rate": DUP_RATE,
                    "rounds": args.rounds, "baseline": args.baseline,
                    "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine(),
                    "loadavg_start": loadavg_start},
            "bare_eps": round(median("bare", "steady_eps")), "workers": workers, "rounds": rounds,
            "ratios": {"new_old": round(speedup, 3), "new_floor": floor_ratio, "cpu_old_new": round(cpu_ratio, 3),
                       "old_floor": workers["old"]["floor_ratio"], "per_round": [round(s, 3) for s in speedups]},
            "pass": {"speedup": speedup >= GOALS["speedup"], "floor_ratio": floor_ratio >= GOALS["floor_ratio"],
                     "steps_per_batch": workers["new"]["steps_per_batch"] <= GOALS["steps_per_batch"],
                     "latency": latency["pass"], "counts_exact": exact},
            "latency": latency, "goals": GOALS, "ok": exact,
        }  # fmt: skip


def print_table(res: dict[str, Any]) -> None:
    run, w, r, ok = res["run"], res["workers"], res["ratios"], {True: "PASS", False: "FAIL"}
    old, new, lat, passed = w["old"], w["new"], res["latency"], res["pass"]
    print(
        f"\nrealtime bench: {run['messages']:,} messages, site {run['site']}, {run['machine']['cpus']} CPUs, "
        f"load average {run['loadavg_start'][0]:.1f} -> {run['machine']['loadavg'][0]:.1f}; "
        f"old = {old['tree']['rev']}, new = {new['tree']['rev']}{' + changes' if new['tree']['dirty'] else ''}"
    )
    columns([
        ("metric (medians over rounds)", "old", "new", "goal", "result"),
        (f"steady events/s (bare consume {res['bare_eps']:,})", f"{old['eps']:,}", f"{new['eps']:,}", "", ""),
        ("RATIO new / old events/s", "", f"{r['new_old']:.2f}", f">= {GOALS['speedup']:.0f}", ok[passed["speedup"]]),
        ("Redis CPU us/event (main thread)", old["redis_us_per_event"], new["redis_us_per_event"], "", ""),
        ("Redis floor events/s (1e6 / us per event)", f"{old['floor_eps']:,}", f"{new['floor_eps']:,}", "", ""),
        ("RATIO worker / its Redis floor", f"{old['floor_ratio']:.3f}", f"{new['floor_ratio']:.3f}",
         f">= {GOALS['floor_ratio']} (new)", ok[passed["floor_ratio"]]),
        ("worker process CPU us/event", old["worker_cpu_us_per_event"], new["worker_cpu_us_per_event"], "", ""),
        ("  ratio old / new (as if each had a CPU alone)", "", f"{r['cpu_old_new']:.2f}", "", ""),
        ("worker / bare events/s", old["bare_ratio"], new["bare_ratio"], "", ""),
        ("atomic steps (EVAL/EVALSHA/FCALL/EXEC) per 1000 ev", old["steps_per_1000"], new["steps_per_1000"], "", ""),
        ("  per batch, merges apart: at most (max over rounds)", old["steps_per_batch"], new["steps_per_batch"],
         "<= 1 (new)", ok[passed["steps_per_batch"]]),
        ("  background merge steps in a round, at most", old["merge_steps"], new["merge_steps"], "", ""),
        ("counts exact after each round", str(old["counts_exact"]), str(new["counts_exact"]), "all",
         ok[passed["counts_exact"]]),
        (f"latency p50 / p99 at {lat['produced_eps']:,} ev/s (new)", "", f"{lat['p50_s']:.3f}s / {lat['p99_s']:.3f}s",
         f"p99 <= {GOALS['p99_s']:.0f}s", ok[lat["pass"]]),
        ("  markers missed / sent, max latency", "", f"{lat['missing']} / {lat['markers']}, {lat['max_s']:.3f}s", "",
         ""),
    ])  # fmt: skip
    print(f"ratios: new/old {r['new_old']:.2f} (goal >= {GOALS['speedup']:.0f}), new/floor {r['new_floor']:.3f} "
          f"(goal >= {GOALS['floor_ratio']}), old/floor {r['old_floor']:.3f} (reference)")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.realtime_bench", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--events", type=int, default=100_000, help="distinct events produced (default 100000)")
    add("--rounds", type=int, default=3, help="bare/old/new triples; medians are reported (default 3)")
    add("--baseline", default=BASELINE, help="commit of the old worker, run from a git worktree (default %(default)s)")
    add("--latency-seconds", type=float, default=30.0, help="duration of the latency load (default 30)")
    add("--out", type=Path, default=OUT / "realtime.json", help="JSON results (default %(default)s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    OUT.mkdir(parents=True, exist_ok=True)
    errors = (KafkaException, BufferError, redis.RedisError, OSError)
    return run_main(lambda cleanup: RealtimeBench(args, cleanup).run(), print_table, args.out, errors)


if __name__ == "__main__":
    sys.exit(main())
