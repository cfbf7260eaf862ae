"""Analysts reading through the proxy, in a process of their own so their work never slows the
process that measures beacons: ``python -m tests.integration.collector.read_storm URL KEY SITE SECONDS
ANALYSTS EVERY_S settled|recent``, ``settled`` reading days before the realtime window (MongoDB
answers), ``recent`` today's (Redis answers). Each analyst asks for a read every ``EVERY_S``
(the next at once if one took longer); prints one JSON line: reads per status and the slowest
read per status."""

from __future__ import annotations

import datetime as dt
import json
import sys
import threading
import time
from collections import Counter

import httpx

SERVER_NAME = "stats.example.com"


def dashboard_reads(site: str, which: str) -> list[tuple[str, dict[str, str]]]:
    """A dashboard's reads of days before the realtime window (``settled``) or of today (``recent``)."""
    today = dt.datetime.now(dt.UTC).date()
    if which == "settled":
        days = {"from": (today - dt.timedelta(days=30)).isoformat(), "to": (today - dt.timedelta(days=3)).isoformat()}
        interval = "day"
    else:
        days, interval = {"from": today.isoformat(), "to": (today + dt.timedelta(days=1)).isoformat()}, "hour"
    base = f"/api/v1/sites/{site}"
    return [
        (f"{base}/timeseries", {**days, "interval": interval, "tz": "UTC"}),
        (f"{base}/aggregate", days),
        (f"{base}/breakdown/pages", days),
        (f"{base}/breakdown/referrers", days),
    ]


def main(url: str, key: str, site: str, seconds: float, analysts: int, every_s: float, which: str) -> dict:
    statuses: Counter[int] = Counter()
    slowest: dict[int, float] = {}
    lock = threading.Lock()
    reads = dashboard_reads(site, which)
    end = time.monotonic() + seconds

    def analyst(offset: int) -> None:
        headers = {"Host": SERVER_NAME, "Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=url, verify=False, headers=headers, timeout=30) as client:
            n = offset
            while (started := time.monotonic()) < end:
                path, params = reads[n % len(reads)]
                n += 1
                try:
                    status = client.get(path, params=params).status_code
                except httpx.HTTPError:
                    status = 0
                took = time.monotonic() - started
                with lock:
                    statuses[status] += 1
                    slowest[status] = max(slowest.get(status, 0.0), took)
                time.sleep(max(0.0, started + every_s - time.monotonic()))

    threads = [threading.Thread(target=analyst, args=(i,)) for i in range(analysts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"statuses": {str(k): v for k, v in statuses.items()}, "slowest_s": {str(k): v for k, v in slowest.items()}}


if __name__ == "__main__":
    url, key, site, seconds, analysts, every_s, which = sys.argv[1:8]
    print(json.dumps(main(url, key, site, float(seconds), int(analysts), float(every_s), which)))
