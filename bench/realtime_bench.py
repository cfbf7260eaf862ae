"""Realtime worker benchmark: the worker's throughput against a bare Kafka consume loop, Redis round trips per
batch, and event -> counter latency at half load, on the stack the environment names. Goals: worker / bare
>= 0.50, 1 round trip per batch, p99 <= 2 s. Usage and figures: bench/README.md."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import logging
import os
import random
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

from bench.harness import OUT, REPO, BenchError, columns, machine, run_main, unlink_matching
from footfall.config import load_config
from footfall.demo import DemoTraffic
from footfall.kafka_client import consumer_config
from footfall_capture.events import Event, encode
from footfall_capture.kafka import client_config, producer_config
from query.realtime import RealtimeQueries
from realtime.consumer import build_processor
from realtime.keys import PREFIX, KeyLayout
from realtime.store import APPLY, ApplyResult, CounterStore

PARTITIONS, DUP_RATE, SEED, BARE_BATCH, MARKER_S, POLL_S, TIMEOUT_S = 6, 0.05, 42, 1000, 0.1, 0.005, 300.0
ID_PREFIX = b'{"event_id":"'  # msgspec writes struct fields in order: every payload starts so
GOALS, LATENCY_LOAD = {"ratio": 0.50, "round_trips": 1, "p99_s": 2.0}, 0.5  # latency at half the worker's rate
# librdkafka's local queue must hold a whole pre-produced stream (its default is 100,000 messages).
PRODUCER = {"queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_000_000}


def round_stats(kind: str, messages: int, wall_s: float, steady_s: float, steady_messages: int, cpu_s: float) -> dict:
    """Rates of a round: steady after its first batch, wall from its start; CPU of the consuming thread only."""
    if steady_messages <= 0 or steady_s <= 0:  # a single chunk: no steady part to time
        steady_messages, steady_s = messages, wall_s
    return {"kind": kind, "wall_s": round(wall_s, 3), "wall_eps": round(messages / wall_s),
            "steady_eps": round(steady_messages / steady_s),
            "cpu_us_per_event": round(1e6 * cpu_s / steady_messages, 2)}  # fmt: skip


def make_stream(site: str, n: int, dup_rate: float, seed: int) -> list[tuple[bytes, bytes]]:
    """``(key, payload)`` of ``n`` page views over the last hour and ``dup_rate`` x n repeats, shuffled, by visitor."""
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
    """The real store, recording each batch's events, round trips, time and CPU; ``done`` at offsets ``want``."""

    def __init__(self, client: redis.Redis, layout: KeyLayout, want: Mapping[str, int]) -> None:
        super().__init__(client, layout)
        self.batches: list[tuple[int, int, float, float]] = []
        self.done, self.want, self._reached = threading.Event(), want, dict[str, int]()

    def apply(self, events: Iterable[Event], now_ms: int, offsets: Mapping[str, int] | None = None,
              group: str = "realtime", known_duplicates: int = 0) -> ApplyResult:  # fmt: skip
        result = super().apply(events := list(events), now_ms, offsets, group, known_duplicates)
        received, now = len(events) + known_duplicates, time.perf_counter()
        self.batches.append((received, result.round_trips, now, time.thread_time()))
        self._reached.update(offsets or {})
        if all(self._reached.get(k, 0) >= v for k, v in self.want.items()):
            self.done.set()
        return result


class RealtimeBench:
    """One run: its site, topics, consumer groups and clean-up (``cleanup`` undoes them all)."""

    def __init__(self, args: argparse.Namespace, cleanup: contextlib.ExitStack) -> None:
        self.args, self.cleanup, self.cfg = args, cleanup, load_config(os.environ, REPO)
        self.admin = AdminClient(client_config(self.cfg.kafka))
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
        unlink_matching(self.client, f"{PREFIX}:{self.site}:*", self.layout.dedup(self.site, "*"))

    def create_topic(self, name: str) -> str:
        self.admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=1)])[name].result(30)
        delete = self.admin.delete_topics
        self.cleanup.callback(quietly, lambda: delete([name])[name].result(timeout=30), f"delete topic {name}")
        return name

    def bare_round(self, topic: str, total: int) -> dict[str, Any]:
        """Read ``total`` messages in a bare consume loop: what a Python consumer gets, the worker's ceiling."""
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

    def script_calls(self) -> int:
        """Successful EVAL + EVALSHA calls so far (NOSCRIPT fails): the round trips as Redis counts them."""
        rows = [v for k, v in self.client.info("commandstats").items() if k in {"cmdstat_eval", "cmdstat_evalsha"}]
        return sum(r["calls"] - r.get("failed_calls", 0) for r in rows)

    def worker_round(self, topic: str, ends: Mapping[int, int]) -> dict[str, Any]:
        """Run the real processor in a thread of a fresh group until its Redis offsets reach ``ends``."""
        self.groups.append(group := f"rtbench-worker-{self.run_id}-{len(self.groups)}")
        client = redis.Redis.from_url(self.cfg.redis_url, socket_timeout=10)
        store = ObservedStore(client, self.layout, {f"{topic}:{p}": end for p, end in ends.items() if end > 0})
        processor = build_processor(self.cfg, store, group, topic)
        thread = threading.Thread(target=processor.run, name="realtime-worker", daemon=True)
        calls, started = self.script_calls(), time.perf_counter()
        thread.start()
        while not store.done.wait(0.2) and thread.is_alive() and time.perf_counter() - started < TIMEOUT_S:
            pass  # a crashed processor ends its thread (arroyo logs the exception)
        processor.signal_shutdown()
        thread.join(30)
        if not store.done.is_set() or thread.is_alive():
            raise BenchError(f"realtime worker did not reach {dict(ends)} and stop in time (see the log above)")
        recorded = client.hgetall(self.layout.offsets(group))
        if any(int(recorded.get(k.encode(), 0)) < v for k, v in store.want.items()):
            raise BenchError(f"offsets recorded in Redis {recorded} are short of {store.want}")
        (first, *_), last, total = store.batches, store.batches[-1], sum(ends.values())
        steady_s, steady_cpu = last[2] - first[2], last[3] - first[3]
        stats = round_stats("worker", total, last[2] - started, steady_s, total - first[0], steady_cpu)
        return {"round": stats, "batches": store.batches, "eval_calls": self.script_calls() - calls}

    def poll_markers(self, pending: dict[str, tuple[str, float]], seen: list[float], lock: threading.Lock,
                     stop: threading.Event) -> None:  # fmt: skip
        """Every ``POLL_S``, one HMGET per minute hash of pending markers; a marker is seen once its field is."""
        while not stop.wait(POLL_S):
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
        log_path, args = OUT / "realtime-worker.log", self.args
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

        def drain(timeout: float) -> bool:  # whether every marker was seen
            deadline = time.monotonic() + timeout
            while pending and time.monotonic() < deadline and proc.poll() is None:
                producer.poll(0.05)
            return not pending

        send_marker()  # warm-up: Django start-up and the group join must not count as latency
        if not drain(120):
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
                next_marker += MARKER_S
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
            "max_s": round(lat[-1], 3), "poll_ms": POLL_S * 1000, "pass": missing == 0 and p99 <= GOALS["p99_s"],
            "samples_s": in_order,
        }  # fmt: skip

    def run(self) -> dict[str, Any]:
        args, loadavg_start = self.args, os.getloadavg()
        topic = self.create_topic(f"rtbench-{self.run_id}")
        print(f"producing {args.events:,} events (+{DUP_RATE:.0%} repeated ids) to {topic} ...", flush=True)
        items = make_stream(self.site, args.events, DUP_RATE, SEED)
        producer = Producer(producer_config(self.cfg.kafka, **PRODUCER))
        for key, payload in items:
            producer.produce(topic, payload, key=key)  # the queue holds them all: flush() delivers
        if producer.flush(120):
            raise BenchError("Kafka did not take every event within 120 s")
        futures = self.admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)})
        ends = {tp.partition: future.result(timeout=10).offset for tp, future in futures.items()}
        if (total := sum(ends.values())) != len(items):
            raise BenchError(f"topic holds {total} messages, {len(items)} were produced")
        rounds, observed, exact = [], [], []
        self.client.script_load(APPLY)  # as a running worker has it: a fresh Redis's NOSCRIPT is no batch's cost
        for _ in range(args.rounds):  # alternate, so drift on a noisy machine hits both alike
            rounds.append(self.bare_round(topic, total))
            self.delete_site_keys()  # else every batch finds its marks: the duplicate path
            observed.append(self.worker_round(topic, ends))
            rounds.append(observed[-1]["round"])
            now = int(time.time() * 1000)
            totals = RealtimeQueries(CounterStore(self.client, self.layout)).totals(self.site, now - 7_200_000, now)
            exact.append(totals["pageviews"] == args.events)
            print(f"round {len(exact)}: " + ", ".join(f"{r['kind']} {r['steady_eps']:,} ev/s" for r in rounds[-2:]))

        def median(kind: str, field: str) -> float:
            return float(statistics.median(r[field] for r in rounds if r["kind"] == kind))

        bare, worker = median("bare", "steady_eps"), median("worker", "steady_eps")
        bare_cpu, worker_cpu = median("bare", "cpu_us_per_event"), median("worker", "cpu_us_per_event")
        rate = LATENCY_LOAD * worker
        print(f"latency: {rate:,.0f} ev/s for {args.latency_seconds:.0f}s, markers every {MARKER_S * 1000:.0f}ms ...")
        self.delete_site_keys()  # the load reuses the payloads: they must count as new
        latency = self.latency(self.create_topic(f"{topic}-lat"), items, rate)
        batches = [b for w in observed for b in w["batches"]]
        trips = [b[1] for b in batches]
        return {
            "run": {"site": self.site, "events": args.events, "messages": total, "dup_rate": DUP_RATE,
                    "rounds": args.rounds, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "machine": machine(), "loadavg_start": loadavg_start},
            "throughput": {"rounds": rounds, "bare_eps": round(bare), "worker_eps": round(worker),
                           "ratio": round(worker / bare, 4), "pass": worker / bare >= GOALS["ratio"],
                           "bare_cpu_us": round(bare_cpu, 2), "worker_cpu_us": round(worker_cpu, 2),
                           "cpu_ratio": round(bare_cpu / worker_cpu, 4), "counts_exact": exact},
            "round_trips": {"batches": len(batches), "mean": round(statistics.mean(trips), 3), "max": max(trips),
                            "sum_round_trips": sum(trips), "eval_calls": sum(w["eval_calls"] for w in observed),
                            "events_per_batch_mean": round(statistics.mean(b[0] for b in batches)),
                            "pass": max(trips) <= GOALS["round_trips"]},
            "latency": latency, "goals": GOALS,
        }  # fmt: skip


def print_table(res: dict[str, Any]) -> None:
    t, rt, lat, run = res["throughput"], res["round_trips"], res["latency"], res["run"]
    ok = {True: "PASS", False: "FAIL"}
    print(f"\nrealtime bench: {run['messages']:,} messages, site {run['site']}, {run['machine']['cpus']} CPUs, "
          f"load average {run['loadavg_start'][0]:.1f} -> {run['machine']['loadavg'][0]:.1f}")  # fmt: skip
    columns([
        ("metric", "measured", "goal", "result"),
        ("events/s bare consume / worker (medians)", f"{t['bare_eps']:,} / {t['worker_eps']:,}", "", ""),
        ("throughput ratio worker / bare", f"{t['ratio']:.4f}", f">= {GOALS['ratio']:.2f}", ok[t["pass"]]),
        ("  CPU us/event of consuming thread b / w", f"{t['bare_cpu_us']} / {t['worker_cpu_us']}", "", ""),
        ("  CPU ratio bare / worker (as if alone)", f"{t['cpu_ratio']:.4f}", "", ""),
        ("Redis round trips per batch, mean / max", f"{rt['mean']:.2f} / {rt['max']}", "= 1", ok[rt["pass"]]),
        ("  EVAL(SHA) calls (INFO) / sum of round trips", f"{rt['eval_calls']} / {rt['sum_round_trips']}", "", ""),
        ("  batches, events per batch", f"{rt['batches']}, {rt['events_per_batch_mean']}", "", ""),
        (f"latency p50 / p99 at {lat['produced_eps']:,} ev/s", f"{lat['p50_s']:.3f}s / {lat['p99_s']:.3f}s",
         f"p99 <= {GOALS['p99_s']:.0f}s", ok[lat["pass"]]),
        ("  markers missed / sent, max latency", f"{lat['missing']} / {lat['markers']}, {lat['max_s']:.3f}s", "", ""),
        ("counts exact after each worker round", str(t["counts_exact"]), "all True", ok[all(t["counts_exact"])]),
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.realtime_bench", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--events", type=int, default=100_000, help="distinct events produced (default 100000)")
    add("--rounds", type=int, default=2, help="bare/worker pairs; medians are reported (default 2)")
    add("--latency-seconds", type=float, default=30.0, help="duration of the latency load (default 30)")
    add("--out", type=Path, default=OUT / "realtime.json", help="JSON results (default %(default)s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    OUT.mkdir(parents=True, exist_ok=True)
    errors = (KafkaException, BufferError, redis.RedisError, OSError)
    return run_main(lambda cleanup: RealtimeBench(args, cleanup).run(), print_table, args.out, errors)


if __name__ == "__main__":
    sys.exit(main())
