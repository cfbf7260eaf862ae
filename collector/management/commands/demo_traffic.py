"""``manage.py demo_traffic``: realistic synthetic page views sent through the collector.

Posts batches to the server-side ingestion API (``/api/v1/sites/<site>/events``) of a
running Footfall web server, once a second, so demo traffic takes the same path as real
traffic: authentication, enrichment (user agent, referrer, country, cookieless visitor
id), the Kafka sink. Runs until interrupted or ``--count`` events were accepted.

``--backfill-days N`` first sends ``--backfill-per-day`` page views for each of the N
previous UTC days (event times in the past, as a server-side import would), so the demo has
history for the nightly rollup to settle; with ``--backfill-only`` it stops after that.
"""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.error
import urllib.request
from types import FrameType

from django.core.management.base import BaseCommand, CommandError, CommandParser

from footfall.demo import DemoTraffic


class Command(BaseCommand):
    help = "Send synthetic page views to a running Footfall collector (demo traffic)."

    def add_arguments(self, parser: CommandParser) -> None:
        port = os.environ.get("FOOTFALL_WEB_PORT", "8000")
        parser.add_argument("--url", default=f"http://127.0.0.1:{port}", help="the collector's base URL")
        parser.add_argument("--key", default=os.environ.get("FOOTFALL_DEMO_KEY", ""), help="API key with ingest scope")
        parser.add_argument("--rate", type=float, default=20.0, help="events per second (default 20)")
        parser.add_argument("--count", type=int, default=0, help="stop after this many events (0: run forever)")
        parser.add_argument("--site", default="demo")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--backfill-days", type=int, default=0, help="send history for this many past days first")
        parser.add_argument("--backfill-per-day", type=int, default=2000, help="page views per backfilled day")
        parser.add_argument("--backfill-only", action="store_true", help="stop after the backfill")

    def handle(self, *args: object, **opts: object) -> None:
        rate, count, key = float(opts["rate"]), int(opts["count"]), str(opts["key"])
        if rate <= 0:
            raise CommandError("--rate must be positive")
        if not key:
            raise CommandError("an API key with the ingest scope is needed (--key or FOOTFALL_DEMO_KEY)")
        endpoint = f"{str(opts['url']).rstrip('/')}/api/v1/sites/{opts['site']}/events"
        traffic = DemoTraffic(site_id=str(opts["site"]), host=f"{opts['site']}.footfall.local", seed=int(opts["seed"]))
        stopping = False

        def on_signal(_signum: int, _frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        days, per_day = int(opts["backfill_days"]), int(opts["backfill_per_day"])
        if not 0 <= days <= 6 or per_day < 1:
            raise CommandError("--backfill-days must be 0-6 (the batch API takes events up to 7 days old)")
        if days:
            self._backfill(endpoint, key, traffic, days, per_day)
        if opts["backfill_only"]:
            return
        sent = accepted = failures = 0
        carry = 0.0
        next_at = time.monotonic()
        while not stopping and (count == 0 or accepted < count):
            carry += rate
            n = int(carry) if count == 0 else min(int(carry), count - accepted)
            carry -= int(carry)
            now_ms = int(time.time() * 1000)
            # Spread the second's events over the last second of event time.
            batch = [b for i in range(n) for b in traffic.visit(now_ms - int(1000 * i / max(n, 1)))]
            if batch:
                ok = self._post(endpoint, key, batch)
                sent += len(batch)
                accepted += ok
                failures += ok < len(batch)
            if sent and sent % max(int(rate * 10), 1) < n:
                self.stdout.write(f"demo traffic: sent={sent} accepted={accepted} failed_batches={failures}")
            next_at += 1.0
            time.sleep(max(0.0, next_at - time.monotonic()))
        self.stdout.write(f"demo traffic stopped: sent={sent} accepted={accepted}")

    def _backfill(self, endpoint: str, key: str, traffic: DemoTraffic, days: int, per_day: int) -> None:
        today = int(time.time() // 86_400) * 86_400_000  # UTC midnight, ms
        accepted = 0
        for back in range(days, 0, -1):
            start = today - back * 86_400_000
            times = sorted(start + int(86_400_000 * i / per_day) for i in range(per_day))
            for first in range(0, len(times), 500):
                batch = [b for ts in times[first : first + 500] for b in traffic.visit(ts)]
                for _attempt in range(5):
                    ok = self._post(endpoint, key, batch)
                    if ok:
                        accepted += ok
                        break
                    time.sleep(1)
        self.stdout.write(f"demo traffic: backfilled {accepted} events over the last {days} days")

    def _post(self, endpoint: str, key: str, batch: list[dict[str, object]]) -> int:
        if not endpoint.startswith(("http://", "https://")):
            raise CommandError(f"--url must be an http(s) URL, got {endpoint!r}")
        request = urllib.request.Request(  # noqa: S310 - scheme checked above
            endpoint,
            data=json.dumps(batch).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 - --url is the operator's own collector
                return int(json.load(resp)["accepted"])
        except (urllib.error.URLError, OSError, ValueError, KeyError) as exc:
            self.stderr.write(f"demo traffic: batch failed ({exc}); retrying next second")
            return 0
