"""Where a request's time goes: profile one gunicorn sync worker over N requests.

Run from the repository root (same stack rules as ``bench.collector_bench``)::

    ~/.cache/footfall/venv/bin/python -m bench.collector_profile                  # 2,000 beacons, cProfile
    ~/.cache/footfall/venv/bin/python -m bench.collector_profile --path empty     # the 204 baseline
    ~/.cache/footfall/venv/bin/python -m bench.collector_profile --profiler pyinstrument

One worker, one request at a time, from one client: a profile of the server's work per
request, not a throughput figure. The first ``--skip`` requests warm caches and
connections and are not profiled. The beacons vary like the wrk script's (page, referrer,
User-Agent, client address). Output: ``artifacts/bench/profile-<path>[-B]-<profiler>.txt``
(and ``.prof`` for cProfile, loadable with ``python -m pstats``, or ``.html`` for
pyinstrument), plus the client-side time per request (``--profiler none``: without the
profiler's overhead).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import itertools
import json
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from bench import harness
from bench.harness import REPO, SITE_ID, BenchError, Server

AGENTS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.6 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile "
    "Safari/537.36",
)
REFERRERS = ("https://www.google.com/", "https://localhost/", "https://x.com/", None)
PAGES = ("/", "/products", "/products/item-7?color=green", "/pricing?utm_source=newsletter&utm_medium=email")
CLIENTS = ("81.2.69.142", "89.160.20.112", "216.160.83.56", "2a02:cf40::1", "175.16.199.1")
PATHS = {"collect": ("POST", "/collect"), "empty": ("GET", "/bench/empty"), "page": ("GET", "/bench/page")}


def requests(kind: str) -> Iterator[tuple[str, str, bytes | None, dict[str, str]]]:
    """(method, path, body, headers) for ``kind``, cycling through the sample values."""
    method, path = PATHS[kind]
    for n in itertools.count():
        headers = {
            "User-Agent": AGENTS[n % len(AGENTS)],
            "X-Forwarded-Proto": "https",
            "X-Forwarded-For": CLIENTS[n // 3 % len(CLIENTS)],
            "Connection": "close",  # sync workers close every connection anyway
        }
        body = None
        if kind == "collect":
            beacon = {
                "site_id": SITE_ID,
                "type": "pageview",
                "url": f"https://localhost{PAGES[n % len(PAGES)]}",
                "event_id": str(uuid.uuid4()),
                "referrer": REFERRERS[n // 4 % len(REFERRERS)],
                "title": "Page",
            }
            body = json.dumps(beacon).encode()
            headers |= {"Content-Type": "text/plain;charset=UTF-8", "Origin": "https://localhost"}
        yield method, path, body, headers


def drive(port: int, kind: str, count: int) -> list[float]:
    """Send ``count`` requests one after another; their wall times in ms."""
    times: list[float] = []
    for method, path, body, headers in itertools.islice(requests(kind), count):
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            resp.read()
        finally:
            conn.close()
        if not 200 <= resp.status < 300:
            raise BenchError(f"{method} {path} answered {resp.status}")
        times.append((time.perf_counter() - started) * 1000)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.collector_profile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", choices=sorted(PATHS), default="collect", help="what to profile (default collect)")
    parser.add_argument("-n", "--requests", type=int, default=2000, help="profiled requests (default 2000)")
    parser.add_argument("--skip", type=int, default=300, help="warm-up requests, not profiled (default 300)")
    parser.add_argument("--middleware", action="store_true", help="serve with ClickstreamMiddleware (variant B)")
    parser.add_argument(
        "--beacon-middleware", action="store_true", help="serve with BeaconMiddleware (see bench/settings_bench.py)"
    )
    parser.add_argument("--profiler", choices=("cprofile", "pyinstrument", "none"), default="cprofile")
    parser.add_argument(
        "--clock", choices=("wall", "cpu"), default="wall", help="cProfile's clock (cpu: steadier on a busy machine)"
    )
    parser.add_argument("--stack", choices=("auto", "env", "own"), default="auto")
    parser.add_argument("--out-dir", type=Path, default=REPO / "artifacts" / "bench")
    args = parser.parse_args(argv)
    harness.handle_signals()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    variant = ("-B" if args.middleware else "") + ("-beacon-mw" if args.beacon_middleware else "")
    clock = "-cpu" if args.clock == "cpu" and args.profiler == "cprofile" else ""
    out = args.out_dir / f"profile-{args.path}{variant}-{args.profiler}{clock}"
    workdir = Path(tempfile.mkdtemp(prefix="footfall-profile-"))
    try:
        with contextlib.ExitStack() as cleanup:
            stack = harness.use_stack(args.stack, workdir, cleanup)
            env = harness.bench_env(stack.app_env, workdir)
            harness.create_site(env)
            env |= {
                "FFBENCH_PROFILER": args.profiler,
                "FFBENCH_PROFILE_OUT": str(out),
                "FFBENCH_PROFILE_CLOCK": args.clock,
                "FFBENCH_PROFILE_SKIP": str(args.skip if args.profiler != "none" else 10**9),
            }
            if args.middleware:
                env["FOOTFALL_BENCH_MIDDLEWARE"] = "1"
            if args.beacon_middleware:
                env["FOOTFALL_BENCH_BEACON_MIDDLEWARE"] = "1"
            server = Server("profile", env, ["-c", "python:bench.gunicorn_profile"], workdir / "gunicorn.log")
            cleanup.callback(server.stop)
            server.start()
            drive(server.port, args.path, args.skip)
            times = drive(server.port, args.path, args.requests)
    except (BenchError, OSError) as exc:
        print(f"profile FAILED: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(
        f"stack: {stack.description}; {args.requests} x {' '.join(PATHS[args.path])} after {args.skip} warm-up requests"
    )
    print(f"client time per request (profiler {args.profiler}): mean {statistics.fmean(times):.2f} ms, "
          f"median {statistics.median(times):.2f} ms, p99 {statistics.quantiles(times, n=100)[98]:.2f} ms")  # fmt: skip
    if args.profiler != "none":
        print(f"profile: {out.with_suffix('.txt')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
