"""Realtime memory benchmark: Redis bytes per event of the speed layer's counters, for the demo traffic mix and for
a referrer-spam mix and an event-spam mix, written through ``CounterStore.apply`` into a private ``redis-server``.
Goals: <= 150 bytes per event on the demo mix, <= 2x that on the spam mixes. Usage and figures: bench/README.md."""

from __future__ import annotations

import argparse
import configparser
import contextlib
import itertools
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import redis

from bench.harness import OUT, REPO, BenchError, columns, machine, run_main, tool
from footfall.demo import DemoTraffic
from footfall_capture.events import Event
from realtime.keys import KeyLayout
from realtime.merge import HourMerger, closed_hours
from realtime.store import CounterStore

GOALS = {"demo": 150.0, "spam": 300.0, "events": 300.0}  # bytes per event; spam mixes: 2x the demo mix's goal
BATCH, SEED, SITE = 5000, 42, "memorybench"
SUPERVISOR_CONF = REPO / "deploy" / "local" / "supervisord.conf"
# Options of the stack's redis-server that name where it runs, not how it stores: the bench sets its own.
PLACE = {"--port", "--bind", "--dir", "--daemonize", "--logfile"}
# No persistence: the dataset is the same, and neither an AOF buffer nor a fork for a rewrite or a snapshot
# shows in used_memory.
NO_PERSISTENCE = ["--appendonly", "no", "--save", ""]


def stack_redis_options(conf: Path = SUPERVISOR_CONF) -> list[str]:
    """The stack's ``redis-server`` options (``[program:redis]`` of supervisord.conf) but where it runs and
    whether it persists: the same memory knobs as the stack's Redis."""
    parser = configparser.RawConfigParser()
    parser.read(conf)
    argv = shlex.split(parser.get("program:redis", "command"))[1:]
    options, i = [], 0
    while i < len(argv):
        j = i + 1
        while j < len(argv) and not argv[j].startswith("--"):
            j += 1  # the option's values
        if argv[i] not in PLACE | {"--appendonly", "--appendfsync", "--save"}:
            options += argv[i:j]
        i = j
    return options


def spammed(event: Event, n: int, domains: int) -> Event:
    """``event`` with the ``n``th distinct spam page (path) and referrer URL, from one of ``domains`` domains."""
    domain = f"spam{n % domains}.example"
    path = f"/offer/{n}"
    return msgspec.structs.replace(
        event, url=f"https://{event.host}{path}", path=path, title="Offer", referrer=f"https://{domain}/r/{n}",
        ref_domain=domain, ref_type="other", utm=None,
    )  # fmt: skip


def event_spammed(event: Event, n: int, domains: int) -> Event:
    """The ``n``th made-up event in place of the page view ``event``: odd ``n`` a custom event whose name and
    property values no other event has, even ``n`` an engagement report on a page and from a referrer URL no
    other event has (issue 31: event names, property values and engaged pages are attacker-controlled too)."""
    if n % 2:
        return msgspec.structs.replace(event, type=f"spam-{n}", props={"plan": f"p{n}", "ref": f"r{n}"})
    return msgspec.structs.replace(
        spammed(event, n, domains), type="engagement",
        props={"engaged_ms": 1000 + n % 5000, "scroll_depth": n % 101, "pageview_id": event.event_id},
    )  # fmt: skip


SPAM = {"spam": spammed, "events": event_spammed}


def traffic(gen: DemoTraffic, start_ms: int, rate: float, count: int, spam: int = 0, domains: int = 1000,
            spam_event: Callable[[Event, int, int], Event] = spammed) -> Iterator[Event]:  # fmt: skip
    """``count`` page views of ``gen`` in event-time order from ``start_ms`` at ``rate`` per second; ``spam`` of
    them, spread evenly, replaced by ``spam_event`` (by default: each with a page and a referrer URL no other
    event has)."""
    for i in range(count):
        event = gen.event(start_ms + int(i * 1000 / rate))
        if spam and (i + 1) * spam // count > i * spam // count:
            event = spam_event(event, i * spam // count, domains)
        yield event


def batches(events: Iterable[Event], size: int) -> Iterator[list[Event]]:
    """Consecutive lists of ``size`` events (the last one shorter), drawn lazily."""
    it = iter(events)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def pageviews(client: redis.Redis, minutes: range) -> int:
    """Page views in the site's minute hashes (``ff:rt:{site}:{minute}:c``, a key every layout keeps)."""
    pipe = client.pipeline(transaction=False)
    for minute in minutes:
        pipe.hget(f"ff:rt:{SITE}:{minute}:c", "pageviews")
    return sum(int(v or 0) for v in pipe.execute())


class PrivateRedis:
    """A ``redis-server`` of the bench's own: a free port, its own directory, the stack's memory knobs."""

    def __init__(self, cleanup: contextlib.ExitStack) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="footfall-memory-"))
        cleanup.callback(shutil.rmtree, self.dir, ignore_errors=True)
        with socket.socket() as sock:  # a free port: the kernel picks it
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.options = [*stack_redis_options(), *NO_PERSISTENCE]
        argv = [tool("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
                "--daemonize", "no", "--logfile", str(self.dir / "redis.log"), *self.options]  # fmt: skip
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
        cleanup.callback(self.stop)
        self.client = redis.Redis(port=self.port, socket_timeout=60)
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(redis.ConnectionError):
                if self.client.ping():
                    break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"redis-server did not start on port {self.port}: see {self.dir / 'redis.log'}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def memory(self) -> dict[str, int]:
        info = self.client.info("memory")
        return {"used": int(info["used_memory"]), "dataset": int(info["used_memory_dataset"]),
                "keys": int(self.client.dbsize())}  # fmt: skip


def measure(mix: str, args: argparse.Namespace, cleanup: contextlib.ExitStack) -> dict[str, Any]:
    """Stream one mix through ``CounterStore.apply`` into a fresh private Redis; its bytes per event."""
    count = round(args.rate * args.hours * 3600)
    spam = round(count * args.spam_share) if mix in SPAM else 0
    server = PrivateRedis(cleanup)
    store = CounterStore(server.client, KeyLayout(retention_s=round(args.retention_hours * 3600)))
    gen = DemoTraffic(site_id=SITE, host=f"{SITE}.example", visitors=args.visitors, seed=SEED)
    start_ms = int(time.time() * 1000) - int(count * 1000 / args.rate)  # the last event is about now
    before, started, done = server.memory(), time.perf_counter(), 0
    print(f"{mix}: {count:,} events at {args.rate:g}/s of event time over {args.hours:g} h"
          f"{f', {spam:,} of them spam' if spam else ''} ...", flush=True)  # fmt: skip
    stream = traffic(gen, start_ms, args.rate, count, spam, args.spam_domains, SPAM.get(mix, spammed))
    merger, merged_until, merge_s = HourMerger(store), start_ms // 3_600_000, 0.0
    for batch in batches(stream, BATCH):
        store.apply(batch, now_ms=batch[-1].ts)  # now = event time, as a live worker sees it
        # The value sketches of each closed hour, merged as the worker merges them (realtime.keys, Value hours).
        if hours := closed_hours(merged_until * 3_600_000, batch[-1].ts):
            t = time.perf_counter()
            merger.merge(SITE, hours)
            merge_s, merged_until = merge_s + time.perf_counter() - t, hours.stop
        done += len(batch)
        if done % (BATCH * max(1, count // BATCH // 10)) == 0:
            print(
                f"  {done:,} events, {time.perf_counter() - started:.0f}s, {server.memory()['used'] / 1e6:,.0f} MB",
                flush=True,
            )
    elapsed, after = time.perf_counter() - started, server.memory()
    minutes = range(start_ms // 60_000, (start_ms + int(count * 1000 / args.rate)) // 60_000 + 1)
    views = count - spam if mix == "events" else count  # its spam events are not page views
    if (counted := pageviews(server.client, minutes)) != views:
        raise BenchError(f"{mix}: the counters hold {counted:,} page views of {views:,}")
    server.stop()
    per_event = (after["used"] - before["used"]) / count
    return {
        "mix": mix, "events": count, "spam_events": spam, "distinct_spam_pages": spam // (2 if mix == "events" else 1),
        "distinct_spam_referrers": spam // (2 if mix == "events" else 1),
        "spam_domains": args.spam_domains if spam else 0, "before": before, "after": after,
        "bytes_per_event": round(per_event, 1),
        "dataset_bytes_per_event": round((after["dataset"] - before["dataset"]) / count, 1),
        "goal": GOALS[mix], "pass": per_event <= GOALS[mix], "seconds": round(elapsed, 1),
        "merged_hours": merged_until - start_ms // 3_600_000, "merge_s": round(merge_s, 1),
        "events_per_s": round(count / elapsed),
    }  # fmt: skip


def run(args: argparse.Namespace, cleanup: contextlib.ExitStack) -> dict[str, Any]:
    loadavg_start, options = os.getloadavg(), [*stack_redis_options(), *NO_PERSISTENCE]
    mixes = {mix: measure(mix, args, cleanup) for mix in args.mixes}
    return {
        "run": {"rate": args.rate, "hours": args.hours, "retention_hours": args.retention_hours,
                "visitors": args.visitors, "spam_share": args.spam_share, "batch": BATCH,
                "redis_options": options, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "machine": machine(), "loadavg_start": loadavg_start},
        "mixes": mixes, "goals": GOALS,
        "spam_over_demo": round(mixes["spam"]["bytes_per_event"] / mixes["demo"]["bytes_per_event"], 2)
        if {"spam", "demo"} <= mixes.keys() else None,
    }  # fmt: skip


def print_table(res: dict[str, Any]) -> None:
    run_, ok = res["run"], {True: "PASS", False: "FAIL"}
    print(f"\nrealtime memory bench: {run_['rate']:g} events/s of event time over {run_['hours']:g} h, retention "
          f"{run_['retention_hours']:g} h, {run_['visitors']:,} visitors, batches of {run_['batch']:,}; "
          f"load average {run_['loadavg_start'][0]:.1f} -> {run_['machine']['loadavg'][0]:.1f}")  # fmt: skip
    header = ("mix", "events", "spam", "keys", "used_memory MB", "dataset MB", "bytes/event", "dataset B/ev", "goal")
    rows: list[tuple[object, ...]] = [(*header, "result", "time")]
    for m in res["mixes"].values():
        rows.append((
            m["mix"], f"{m['events']:,}", f"{m['spam_events']:,}", f"{m['after']['keys']:,}",
            f"{m['before']['used'] / 1e6:.1f} -> {m['after']['used'] / 1e6:,.1f}",
            f"{m['before']['dataset'] / 1e6:.1f} -> {m['after']['dataset'] / 1e6:,.1f}",
            f"{m['bytes_per_event']:,.1f}", f"{m['dataset_bytes_per_event']:,.1f}", f"<= {m['goal']:.0f}",
            ok[m["pass"]], f"{m['seconds']:.0f}s ({m['merged_hours']} hours merged in {m['merge_s']:.1f}s)",
        ))  # fmt: skip
    columns(rows)
    if res["spam_over_demo"] is not None:
        print(f"spam / demo bytes per event: {res['spam_over_demo']:.2f} (goal: spam <= {GOALS['spam']:.0f} bytes)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.realtime_memory", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--rate", type=float, default=1000.0, help="events per second of event time (default 1000)")
    add("--hours", type=float, default=2.0, help="hours of event time (default 2)")
    add("--events-scale", type=float, default=1.0, help="scales the rate, e.g. 0.01 for a smoke run (default 1)")
    add("--visitors", type=int, default=100_000, help="visitor pool of the demo traffic (default 100000)")
    add("--spam-share", type=float, default=5 / 36,
        help="share of the spam mix's page views with a distinct page and referrer URL (default 5/36: 1M at the "
             "defaults)")  # fmt: skip
    add("--spam-domains", type=int, default=1000, help="domains the spam referrers come from (default 1000)")
    add("--retention-hours", type=float, default=48.0, help="the store's retention (default 48, the product's)")
    add("--mixes", nargs="+", choices=("demo", "spam", "events"), default=["demo", "spam", "events"],
        help="demo traffic; spam: distinct pages and referrer URLs; events: distinct custom event names and "
             "property values, and engagement reports on distinct pages from distinct referrer URLs")  # fmt: skip
    add("--out", type=Path, default=OUT / "realtime_memory.json", help="JSON results (default %(default)s)")
    args = parser.parse_args(argv)
    args.rate *= args.events_scale
    OUT.mkdir(parents=True, exist_ok=True)
    return run_main(lambda cleanup: run(args, cleanup), print_table, args.out, (redis.RedisError, OSError))


if __name__ == "__main__":
    sys.exit(main())
