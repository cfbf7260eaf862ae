"""Export memory benchmark: the web server's RSS while it streams a 1M-event export of a site's raw events.

A local archive gets 1,000,000 events of one site over three days (Hive partitions by hour, as the archiver writes
them, plus a re-archived copy of 5 % of them); one gunicorn worker serves the API, and the bench downloads
``GET /api/v1/sites/<site>/export`` for the three days in each format while sampling the worker's RSS every 20 ms.
Growth = peak RSS during the export - RSS after a warm-up export of one hour. Goal: <= 100 MB in every format.
Usage and figures: bench/README.md."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from bench import harness
from bench.harness import OUT, BenchError, columns, machine, run_main

GOAL_MB = 100.0
SITE, SEED = "exportbench", 11
DAY0 = dt.date(2026, 5, 1)
FORMATS = ("parquet", "csv", "jsonl")
# Behind the pretend TLS proxy (FOOTFALL_TRUSTED_PROXIES=1): with DEBUG off the server redirects plain HTTP.
AS_IF_TLS = {"X-Forwarded-Proto": "https"}


def fill_archive(root: Path, events: int) -> int:
    """``events`` demo events of SITE over three UTC days into a local archive at ``root``; returns rows written."""
    from archive.schema import partition_path, to_row
    from archive.store import Archive, ArchiveRow
    from footfall.demo import DemoTraffic
    from footfall_capture.events import encode

    archive = Archive(root.as_uri())
    gen = DemoTraffic(site_id=SITE, seed=SEED)
    start = int(dt.datetime.combine(DAY0, dt.time(), dt.UTC).timestamp() * 1000)
    step = 3 * 86_400_000 // events
    written, batch = 0, []
    for i in range(events):
        ts = start + i * step
        event = gen.event(ts, received_at_ms=ts + 50)
        row = ArchiveRow(partition_path(SITE, ts), to_row(event, encode(event), i % 6, i))
        batch.append(row)
        if i % 20 == 0:  # re-archived: a batch whose offsets were not committed
            batch.append(ArchiveRow(row.partition, {**row.row, "received_at": ts + 80, "kafka_offset": i + 10**9}))
        if len(batch) >= 50_000 or i == events - 1:
            archive.write(batch)
            written, batch = written + len(batch), []
    return written


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def worker_pid(master: int) -> int:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    if len(children) != 1:
        raise BenchError(f"expected one gunicorn worker, found {children}")
    return int(children[0])


def answers(url: str) -> bool:
    """Whether the server answers ``url`` (health says 503 here: no Kafka or MongoDB, which exports need not)."""
    try:
        urllib.request.urlopen(urllib.request.Request(url, headers=AS_IF_TLS), timeout=5)
    except urllib.error.HTTPError:
        return True
    return True


def download(url: str, key: str, pid: int) -> tuple[int, int, float]:
    """(bytes, peak RSS kB of ``pid`` while downloading ``url``, seconds)."""
    peak, done = [rss_kb(pid)], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_kb(pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started, size = time.monotonic(), 0
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}", **AS_IF_TLS})
    try:
        with urllib.request.urlopen(request, timeout=600) as answer:
            while chunk := answer.read(1 << 20):
                size += len(chunk)
    finally:
        done.set()
        sampler.join()
    return size, peak[0], time.monotonic() - started


def run(args: argparse.Namespace, cleanup: contextlib.ExitStack) -> dict[str, Any]:
    workdir = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="footfall-export-bench-")))
    env, stack = harness.use_stack(args.stack, workdir, cleanup, ("redis",))
    print(f"writing {args.events:,} events into {workdir / 'archive'}", flush=True)
    t0 = time.monotonic()
    rows = fill_archive(workdir / "archive", args.events)
    fill_s = time.monotonic() - t0
    server = harness.server_env(env, workdir, "footfall_server.settings", ARCHIVE_URL=(workdir / "archive").as_uri(),
                                FOOTFALL_TRUSTED_PROXIES="1")  # fmt: skip
    harness.manage(server, "migrate", "--noinput", "-v0")
    harness.manage(server, "create_site", SITE, "--domain", "demo.footfall.local", "--timezone", "UTC")
    key = harness.manage(server, "create_api_key", SITE, "--scope", "export", "--name", "bench").strip().split()[-1]
    gunicorn = harness.Server("export", server, workdir / "server.log")
    gunicorn.argv[gunicorn.argv.index("--workers") + 1] = "1"  # one worker: its RSS is the server's
    cleanup.callback(gunicorn.stop)
    try:
        gunicorn.start(lambda: answers(f"{gunicorn.url}/api/v1/health"))
    except BenchError as exc:
        raise BenchError(f"{exc}\n{(workdir / 'server.log').read_text()[-3000:]}") from None
    pid = worker_pid(gunicorn.proc.pid)
    base = f"{gunicorn.url}/api/v1/sites/{SITE}/export"
    end = DAY0 + dt.timedelta(days=3)
    results = []
    for fmt in FORMATS:
        download(f"{base}?from={DAY0}T00:00&to={DAY0}T01:00&format={fmt}", key, pid)  # warm: imports, first reads
        before = rss_kb(pid)
        size, peak, seconds = download(f"{base}?from={DAY0}&to={end}&format={fmt}&tz=UTC", key, pid)
        growth = (peak - before) / 1024
        results.append({"format": fmt, "bytes": size, "rss_before_mb": before / 1024, "peak_mb": peak / 1024,
                        "growth_mb": growth, "seconds": seconds, "ok": growth <= GOAL_MB})  # fmt: skip
    return {"events": args.events, "archived_rows": rows, "fill_s": fill_s, "stack": stack, "goal_mb": GOAL_MB,
            "results": results, "ok": all(r["ok"] for r in results), "machine": machine()}  # fmt: skip


def show(doc: dict[str, Any]) -> None:
    print(f"{doc['events']:,} events ({doc['archived_rows']:,} archived rows), goal: growth <= {doc['goal_mb']:.0f} MB")
    rows = [("format", "MB out", "RSS before", "peak", "growth MB", "s", "ok")]
    for r in doc["results"]:
        rows.append((r["format"], f"{r['bytes'] / 1e6:.1f}", f"{r['rss_before_mb']:.0f}", f"{r['peak_mb']:.0f}",
                     f"{r['growth_mb']:.1f}", f"{r['seconds']:.1f}", "yes" if r["ok"] else "NO"))  # fmt: skip
    columns(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--stack", choices=("auto", "env", "own"), default="auto")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "footfall_server.settings")
    return run_main(lambda cleanup: run(args, cleanup), show, OUT / "export_memory.json")


if __name__ == "__main__":
    raise SystemExit(main())
