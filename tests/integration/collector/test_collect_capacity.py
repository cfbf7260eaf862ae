"""Beacons while analysts read and a store is down, as deployed: /collect keeps its p99.

The shipped nginx site (deploy/proxy/nginx) runs in front of two gunicorns started with the
systemd units' own commands, footfall-web and footfall-collector, the proxy sending what takes
events to the latter. A steady stream of beacons goes through the proxy while analysts read in
a process of their own: settled days (MongoDB's part of the API) with MongoDB up, then stopped,
then hung (SIGSTOP: it accepts connections and never answers, so every read in flight holds its
web thread for seconds); then today (Redis') with Redis stopped. Beacon latency is measured from
each beacon's scheduled time, so a stall also counts for the beacons it delays. In each outage
the beacons' p99 stays within twice their p99 with the stores up, every beacon is taken and on
the log once, and reads get the API's 503 (a stopped store's within its timeout).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from django.conf import settings as django_settings

from footfall.config import Config
from tests.ports import free_port
from tests.proxy import SERVER_NAME, Ports, nginx_binary, proxy_config
from tests.reliability.faults import fresh_topic, frozen, percentiles, stack, topic_event_ids, wait_for

# Committed (no test transaction): the servers' own processes read the site and its key.
pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[3]
UNITS = REPO / "deploy" / "systemd"
BEACONS_PER_S = 40
SENDERS = 4
PHASE_S = 15
ANALYSTS = 16
READ_EVERY_S = 0.5
MOST_P99_RATIO = 2.0
# Besides: CI runs another test session on the same two cores, whose bursts (a Spark job
# starting) moved a phase's p99 by up to ~70 ms on their own (14 ms with the stores up, 83 with
# Redis stopped, which /collect does not use). What this test guards against is a stall of
# seconds: beacons sharing threads with reads on a hung MongoDB had a p99 of 6.9 s.
NOISE_MS = 100.0
# The first reads of each web worker wait out MongoDB's server selection (MONGO_TIMEOUT_MS, 1 s,
# which pymongo's monitor re-checks every 0.5 s), 16 at once on the machine's few cores; a
# single read's 1.5 s is tests/reliability/test_store_outage_reads.py's.
MOST_READ_S = 2.0


@dataclass(frozen=True)
class Deployment:
    url: str  # the proxy's https:// address
    site_id: str
    read_key: str
    topic: str


def unit_command(unit: str, port: int) -> list[str]:
    """The unit's ExecStart with this virtualenv's commands and ``port`` in its --bind."""
    found = re.search(r"^ExecStart=(.+)$", (UNITS / unit).read_text(), re.M)
    assert found is not None, unit
    argv = shlex.split(found.group(1))
    argv[0] = str(Path(sys.executable).parent / Path(argv[0]).name)
    argv[argv.index("--bind") + 1] = f"127.0.0.1:{port}"
    return argv


def behind_the_proxy(topic: str, **settings: str) -> dict[str, str]:
    """The environment of a server deployed behind the shipped nginx (one trusted proxy), on the
    tests' database, writing to ``topic``, with ``settings`` besides."""
    return {
        **os.environ,
        "FOOTFALL_ENV": "production",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": SERVER_NAME,
        "FOOTFALL_TRUSTED_PROXIES": "1",
        "DATABASE_URL": f"sqlite:///{django_settings.DATABASES['default']['NAME']}",  # the tests' database
        "FOOTFALL_EVENTS_TOPIC": topic,
        **settings,
    }


@contextlib.contextmanager
def running(argv: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen]:
    with log.open("a") as out:
        process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


def client(url: str, **headers: str) -> httpx.Client:
    return httpx.Client(base_url=url, verify=False, headers={"Host": SERVER_NAME, **headers}, timeout=30)


@pytest.fixture
def deployment(cfg: Config, tmp_path: Path) -> Iterator[Deployment]:
    from footfall.models import ApiKey, Site

    site = Site.objects.create(site_id=f"cap-{uuid.uuid4().hex[:8]}", name="Capacity", domains=["example.com"])
    _, read_key = ApiKey.issue(site, "analysts", ["read"])
    ports = Ports(https=free_port(), http=free_port(), web=free_port(), collector=free_port())
    conf = proxy_config(tmp_path / "proxy", ports)
    with fresh_topic(cfg, prefix="cap") as topic:
        # Every beacon comes from one address and every read with one key: no per-client limits.
        env = behind_the_proxy(topic, FOOTFALL_CLIENT_RATE="100000", FOOTFALL_CLIENT_BURST="100000",
                               FOOTFALL_API_RATE_PER_MINUTE="1000000")  # fmt: skip
        with (
            running(unit_command("footfall-web.service", ports.web), tmp_path / "web.log", env),
            running(unit_command("footfall-collector.service", ports.collector), tmp_path / "collector.log", env),
            running([str(nginx_binary()), "-p", str(conf.parent), "-c", str(conf), "-g", "daemon off;"],
                    tmp_path / "nginx.log") as nginx,
        ):  # fmt: skip
            url = f"https://127.0.0.1:{ports.https}"

            def up() -> bool:
                assert nginx.poll() is None, (tmp_path / "nginx.log").read_text()
                with contextlib.suppress(httpx.HTTPError), client(url) as http:
                    return http.get("/api/v1/health").status_code in {200, 503}
                return False

            wait_for(up, 90, "the proxy answering for the web process")
            yield Deployment(url, site.site_id, read_key, topic)


@dataclass
class Phase:
    latencies: list[float]
    statuses: Counter[int]
    reads: dict


def run_phase(deployment: Deployment, seconds: float, reads: str = "settled") -> Phase:
    """Beacons at BEACONS_PER_S for ``seconds`` through the proxy, while the analysts read
    ``settled`` days (MongoDB's) or ``recent`` ones (Redis')."""
    storm = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.collector.read_storm", deployment.url, deployment.read_key,
         deployment.site_id, str(seconds), str(ANALYSTS), str(READ_EVERY_S), reads],
        cwd=REPO, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    interval = SENDERS / BEACONS_PER_S
    start = time.monotonic() + 0.5

    def sender(k: int) -> None:
        with client(deployment.url, **{"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0"}) as http:
            n = 0
            while (scheduled := start + k * interval / SENDERS + n * interval) < start + seconds:
                time.sleep(max(0.0, scheduled - time.monotonic()))
                body = json.dumps({"site_id": deployment.site_id, "url": f"https://example.com/p/{k}/{n}"})
                try:
                    status = http.post("/collect", content=body, headers={"Content-Type": "text/plain"}).status_code
                except httpx.HTTPError:
                    status = 0
                with lock:
                    latencies.append(time.monotonic() - scheduled)  # from when it was due
                    statuses[status] += 1
                n += 1

    threads = [threading.Thread(target=sender, args=(k,)) for k in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out, _ = storm.communicate(timeout=seconds + 120)
    assert storm.returncode == 0
    return Phase(latencies, statuses, json.loads(out.strip().splitlines()[-1]))


def test_beacons_keep_their_p99_while_a_store_is_down_under_a_read_storm(cfg: Config, deployment: Deployment) -> None:
    warm = run_phase(deployment, 3)  # connections, the day's salts, the site cache
    up = run_phase(deployment, PHASE_S)
    stack("stop", "mongo")
    try:
        stopped = run_phase(deployment, PHASE_S)
    finally:
        stack("start", "mongo")
    wait_for(lambda: set(run_phase(deployment, 1).reads["statuses"]) == {"200"}, 60, "reads answered again")
    # Hung: each read in flight waits out MONGO_QUERY_TIMEOUT_MS (5 s), every web thread at
    # once; beacons that shared those threads would wait as long (with beacons sent to the web
    # process instead, this phase's p99 was 6.9 s against 12.7 ms with MongoDB up).
    with frozen("mongo"):
        hung = run_phase(deployment, PHASE_S)
    # Redis stopped, the analysts reading today (the realtime counters').
    stack("stop", "redis")
    try:
        redis_stopped = run_phase(deployment, PHASE_S, reads="recent")
    finally:
        stack("start", "redis")
    phases = {"stores up": up, "mongo stopped": stopped, "mongo hung": hung, "redis stopped": redis_stopped}
    figures = {name: percentiles(phase.latencies) for name, phase in phases.items()}
    print(f"\n/collect through the proxy, {BEACONS_PER_S}/s, {ANALYSTS} analysts each reading every {READ_EVERY_S}s:")
    for name, phase in phases.items():
        print(f"  {name}: beacons {figures[name]} ms; reads {phase.reads}")
    sent = sum(sum(phase.statuses.values()) for phase in (warm, *phases.values()))
    for name, phase in phases.items():
        assert set(phase.statuses) == {202}, (name, phase.statuses)
    assert set(up.reads["statuses"]) == {"200"}, up.reads
    assert set(stopped.reads["statuses"]) == {"503"}, stopped.reads
    for phase in (stopped, redis_stopped):
        assert set(phase.reads["statuses"]) == {"503"}, phase.reads
        assert phase.reads["slowest_s"]["503"] <= MOST_READ_S, phase.reads
    assert "503" in hung.reads["statuses"], hung.reads
    # A read in flight waits for Mongo's answer MONGO_QUERY_TIMEOUT_MS at most, then as if stopped.
    assert max(hung.reads["slowest_s"].values()) <= cfg.mongo_query_timeout_ms / 1000 + MOST_READ_S, hung.reads
    for name in ("mongo stopped", "mongo hung", "redis stopped"):
        baseline = figures["stores up"]["p99"]
        assert figures[name]["p99"] <= max(MOST_P99_RATIO * baseline, baseline + NOISE_MS), figures
    # Every beacon taken is on the log, once.
    ids = wait_for_ids(cfg, deployment.topic, sent)
    assert set(ids.values()) == {1}


def wait_for_ids(cfg: Config, topic: str, at_least: int) -> Counter[str]:
    found: Counter[str] = Counter()

    def enough() -> bool:
        nonlocal found
        found = topic_event_ids(cfg, topic)
        return len(found) >= at_least

    wait_for(enough, 60, f"{at_least} beacons on the log")
    return found
