"""The spool's append rate during a Kafka outage: one thread against many, in one run.

Run from the repository root::

    ~/.cache/footfall/venv/bin/python -m bench.spool_bench                      # this disk's fsync
    ~/.cache/footfall/venv/bin/python -m bench.spool_bench --fsync-delay-ms 5   # a slow disk

While Kafka is down every accepted beacon is appended to the spool, and an append returns
only once an fsync covering its record has completed. With one fsync per record the rate is
1/fsync-latency per process however many request threads wait; group commit lets the
threads that arrive during an fsync share the next one. The benchmark appends the same
number of beacon-sized records (400 bytes) from 1 thread and from ``--threads`` threads,
alternating over ``--rounds``, into a spool under ``--dir`` (default: a temporary directory
next to the collector's spool, ``FOOTFALL_SPOOL_DIR``, so on its file system), and reports the
median appends/s of each and their ratio: ≤ 1 means the threads queue behind one another's
fsyncs, above 1 that they share them. ``--fsync-delay-ms`` sleeps before each fsync to
stand in for a slower disk than this one. Writes ``artifacts/bench/spool.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from footfall.config import load_config
from footfall_capture import spool as spool_module
from footfall_capture.spool import Spool

REPO = Path(__file__).resolve().parent.parent
RECORD = b"x" * 400  # about a beacon's encoded event


def appends_per_second(directory: Path, threads: int, records: int) -> float:
    """Append ``records`` records from ``threads`` threads into a fresh spool; appends/s."""
    spool = Spool(Path(tempfile.mkdtemp(dir=directory)), 1 << 34)
    share = records // threads

    def writer() -> None:
        for _ in range(share):
            spool.append(RECORD)

    pool = [threading.Thread(target=writer) for _ in range(threads)]
    started = time.perf_counter()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    elapsed = time.perf_counter() - started
    spool.close()
    return share * threads / elapsed


def slowed(fsync: Callable[[int], None], delay_s: float) -> Callable[[int], None]:
    def slow_fsync(fd: int) -> None:
        time.sleep(delay_s)
        fsync(fd)

    return slow_fsync


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.spool_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=8, help="threads of the concurrent variant (default 8)")
    parser.add_argument("--records", type=int, default=0, help="records per variant and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, alternating the variants (default 3)")
    parser.add_argument("--fsync-delay-ms", type=float, default=0.0, help="sleep before each fsync (default 0)")
    parser.add_argument("--dir", type=Path, default=None, help="where the spools go")
    parser.add_argument("--json", type=Path, default=REPO / "artifacts" / "bench" / "spool.json")
    args = parser.parse_args(argv)

    base = args.dir or load_config(os.environ, REPO).spool_dir.parent
    base.mkdir(parents=True, exist_ok=True)
    if args.fsync_delay_ms:
        # os.fsync itself (spool_module.os is the os module): in this process only the spool
        # calls it. A slower disk, same code path.
        real = os.fsync
        spool_module.os.fsync = slowed(real, args.fsync_delay_ms / 1000)  # type: ignore[attr-defined]
    records = args.records or (400 if args.fsync_delay_ms >= 1 else 8000)
    records -= records % args.threads
    single, many = "1 thread", f"{args.threads} threads"
    rates: dict[str, list[float]] = {single: [], many: []}
    with tempfile.TemporaryDirectory(dir=base, prefix="spool-bench-") as workdir:
        for round_no in range(args.rounds):
            order = [(single, 1), (many, args.threads)]
            for key, threads in order if round_no % 2 == 0 else reversed(order):
                rates[key].append(appends_per_second(Path(workdir), threads, records))
                print(f"round {round_no + 1}/{args.rounds} {key:<11} {rates[key][-1]:9.0f} appends/s", flush=True)
    medians = {key: statistics.median(values) for key, values in rates.items()}
    ratio = medians[many] / medians[single]
    print(f"\nspool under {base} ({args.fsync_delay_ms:g} ms added per fsync), {records} records of {len(RECORD)} B")
    for key, value in medians.items():
        print(f"{key:<11} {value:9.0f} appends/s (median)")
    print(f"ratio {args.threads} threads / 1 thread: {ratio:.2f} (≤ 1: each fsync serves one record)")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "benchmark": "spool",
        "config": {
            "threads": args.threads,
            "records": records,
            "rounds": args.rounds,
            "fsync_delay_ms": args.fsync_delay_ms,
            "dir": str(base),
        },
        "rates": rates,
        "medians": medians,
        "ratio": ratio,
    }
    args.json.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"JSON: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
