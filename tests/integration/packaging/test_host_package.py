"""The capture library installed from its wheel into new Django sites, as another team would.

The wheel built from ``host/`` goes into a fresh virtual environment outside the checkout, for
Django 4.2 and for Django 5.2, both at once; ``django-admin startproject`` makes each host and
the settings of docs/host-package.md are added: a site id, the collector's URL and an ingest key,
nothing of the server's Kafka or Redis. The server's collector runs as its own process
(gunicorn) producing to a topic of this module, read by a realtime worker, so what a host sent
is checked where users see it: the realtime API, and the archive. The hosts run with ``DEBUG``
off and their own SECRET_KEY. What the install pulled in, its size, the memory and threads the
middleware adds, and the log lines of sites whose collector or Kafka is down are printed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import redis
from django.conf import settings as django_settings

from archive.store import Archive
from footfall.config import Config
from footfall_capture.events import decode
from realtime.consumer import build_processor
from realtime.keys import KeyLayout
from realtime.store import CounterStore
from tests.integration.batch.test_rollup_e2e import archive_topic
from tests.integration.kafka_tail import TopicTail
from tests.integration.packaging.conftest import REPO, Wheels
from tests.ports import free_port
from tests.reliability.faults import fresh_topic, stack, topic_event_ids, wait_for

# The server's database holds the hosts' site and keys (made by a module fixture, committed, so
# that the collector's own process reads them); the mark has pytest-django create it.
pytestmark = pytest.mark.django_db

DJANGOS = ("4.2", "5.2")
# What a host must never be made to install: the server's heavy parts, and (over HTTP) the
# Kafka transport's extra.
SERVER_ONLY = {"pyarrow", "pyspark", "dash", "plotly", "celery", "pymongo", "djangorestframework", "gunicorn"}
KAFKA_EXTRA = {"confluent-kafka", "redis", "ua-parser", "crawlerdetect", "geoip2fast", "tldextract", "url-normalize"}
MOST_INSTALLED_BYTES = 10_000_000  # beyond Django, over HTTP
MOST_RSS_GROWTH_BYTES = 20_000_000
MOST_NEW_THREADS = 2
# The server's management commands: none may appear in a host.
SERVER_COMMANDS = {
    "create_site", "create_api_key", "demo_traffic", "import_events", "replay_spool", "rollup", "compact_archive",
    "run_archiver", "realtime_stats", "rebuild_realtime", "run_realtime", "dashboard_user", "share_link",
    "kafka_topics", "kafka_host_user", "redis_host_user",
}  # fmt: skip
CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
PAGE_VIEW = """
from django.http import HttpResponse


def page(request, name=""):
    return HttpResponse(f"<html><title>{name}</title><body>hello</body></html>", content_type="text/html")
"""
OUTAGE_VIEWS = 1800  # a site's 30 minutes at a page view a second, all sent while the collector is down
WINDOW_S = 120.0  # log lines are counted over two minutes of an outage
MOST_LINES_A_MINUTE = 2
ACCESS_LINE = re.compile(r'"[A-Z]+ \S+ HTTP/1\.[01]" \d{3}')  # runserver's own request log: the host's lines


@dataclass(frozen=True)
class ServerSite:
    """The site on the server the hosts report to, with an ingest key (the hosts') and a read key (the test's)."""

    site_id: str
    ingest_key: str
    read_key: str


@dataclass
class Host:
    """A Django site made by ``startproject`` in its own virtual environment."""

    django: str
    venv: Path
    project: Path
    installed_bytes: tuple[int, int]  # the environment with Django alone, and with the wheel too

    def python(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv / "bin" / "python"), *args],
            cwd=self.project, env=host_environment(), capture_output=True, text=True, check=True, timeout=300,
        )  # fmt: skip

    def settings_module(self, name: str, text: str) -> str:
        """A settings module of the host, ``text`` after everything of ``hostsite.settings``."""
        (self.project / "hostsite" / f"{name}.py").write_text(f"from .settings import *  # noqa: F403\n{text}")
        return f"hostsite.{name}"


@dataclass
class Running:
    """A host's ``manage.py runserver`` process and its URL."""

    base: str
    process: subprocess.Popen
    log: Path

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines()


def host_environment() -> dict[str, str]:
    """A host's own environment: none of the stack's variables, DEBUG off, no SECRET_KEY."""
    return {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "DEBUG": "0", "PYTHONUNBUFFERED": "1"}


# --- the server side ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def server_site(django_db_setup: None, django_db_blocker) -> Iterator[ServerSite]:
    from footfall.models import ApiKey, Site

    with django_db_blocker.unblock():
        site = Site.objects.create(site_id=f"host-{uuid.uuid4().hex[:8]}", name="Host", domains=["127.0.0.1"])
        _, ingest = ApiKey.issue(site, "host site", ["ingest"])
        _, read = ApiKey.issue(site, "test", ["read"])
    try:
        yield ServerSite(site.site_id, ingest, read)
    finally:
        with django_db_blocker.unblock():
            site.delete()


@pytest.fixture(scope="module")
def topic(cfg: Config) -> Iterator[str]:
    with fresh_topic(cfg, prefix="host") as name:
        yield name


class Collector:
    """The server (``footfall_server.wsgi`` under gunicorn) on a fixed port, producing to ``topic``."""

    def __init__(self, topic: str, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{django_settings.DATABASES['default']['NAME']}",  # the tests' database
            "FOOTFALL_EVENTS_TOPIC": topic,
            "ALLOWED_HOSTS": "127.0.0.1",
        }
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with self.log.open("a") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "footfall_server.wsgi", "--bind", f"127.0.0.1:{self.port}",
                 "--workers", "1", "--threads", "8", "--graceful-timeout", "10"],
                cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        wait_for(lambda: self.process.poll() is not None or answers(f"{self.url}/api/v1/health"), 60,
                 "the collector answering")  # fmt: skip
        assert self.process.poll() is None, self.log.read_text()[-3000:]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # gunicorn's graceful stop: requests in flight finish
            self.process.wait(30)


@pytest.fixture(scope="module")
def collector(server_site: ServerSite, topic: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    server = Collector(topic, tmp_path_factory.mktemp("collector") / "gunicorn.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def realtime(cfg: Config, topic: str) -> Iterator[None]:
    """A realtime worker on the collector's topic, for the module's whole run."""
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout(retention_s=cfg.realtime_retention_s))
    processor = build_processor(cfg, store, f"rt-{topic}", topic, max_batch_size=1000, max_batch_time=0.3)
    thread = threading.Thread(target=processor.run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        processor.signal_shutdown()
        thread.join(30)


def page_counts(collector: Collector, site: ServerSite, prefix: str) -> Counter[str]:
    """Today's page views by path under ``prefix``, as the server's API answers them (realtime, today)."""
    today = dt.datetime.now(dt.UTC).date().isoformat()
    query = urllib.parse.urlencode({"from": today, "limit": 1000})
    body = api_get(f"{collector.url}/api/v1/sites/{site.site_id}/breakdown/pages?{query}", site.read_key)
    return Counter({row["value"]: row["pageviews"] for row in body["results"] if row["value"].startswith(prefix)})


def api_get(url: str, key: str) -> dict:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


# --- the hosts ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hosts(wheels: Wheels, server_site: ServerSite, collector: Collector, tmp_path_factory: pytest.TempPathFactory,
          ) -> dict[str, Host]:  # fmt: skip
    """One host per supported Django line, made side by side."""
    key_file = tmp_path_factory.mktemp("secrets") / "footfall-ingest-key"
    key_file.write_text(server_site.ingest_key + "\n")
    key_file.chmod(0o600)
    with ThreadPoolExecutor(len(DJANGOS)) as pool:
        made = pool.map(lambda v: make_host(tmp_path_factory.mktemp(f"host-django-{v}"), wheels, v, server_site,
                                            collector, key_file), DJANGOS)  # fmt: skip
        return dict(zip(DJANGOS, made, strict=True))


def site_packages_bytes(venv: Path) -> int:
    folder = next((venv / "lib").glob("python3.*/site-packages"))
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def make_host(root: Path, wheels: Wheels, django: str, site: ServerSite, collector: Collector, key_file: Path,
              ) -> Host:  # fmt: skip
    """A venv in ``root`` with Django ``django`` and then the wheel, and a project set up as
    docs/host-package.md says (HTTP transport)."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, f"django~={django}.0"], check=True, timeout=600)
    django_alone = site_packages_bytes(venv)
    subprocess.run([*pip, str(wheels.capture)], check=True, timeout=600)
    host = Host(django, venv, root, (django_alone, site_packages_bytes(venv)))
    subprocess.run([str(venv / "bin" / "django-admin"), "startproject", "hostsite", str(root)], check=True)
    (root / "hostsite" / "views.py").write_text(PAGE_VIEW)
    urls = root / "hostsite" / "urls.py"
    urls.write_text(
        urls.read_text().replace("from django.urls import path", "from django.urls import path\n\nfrom . import views")
        + 'urlpatterns += [path("", views.page), path("<slug:name>", views.page)]\n'
    )
    settings = root / "hostsite" / "settings.py"
    settings.write_text(
        settings.read_text()
        .replace("DEBUG = True", "DEBUG = False")
        .replace("ALLOWED_HOSTS = []", 'ALLOWED_HOSTS = ["127.0.0.1", "localhost"]')
        + f"""
# Footfall, as docs/host-package.md tells a host site to add it:
MIDDLEWARE += ["footfall_capture.middleware.ClickstreamMiddleware"]
FOOTFALL_SITE_ID = "{site.site_id}"
FOOTFALL_COLLECTOR_URL = "{collector.url}"
FOOTFALL_INGEST_KEY_FILE = "{key_file}"
FOOTFALL_SPOOL_DIR = "{root / "spool"}"
"""
    )
    return host


@contextlib.contextmanager
def run_host(host: Host, log_path: Path, settings: str = "hostsite.settings") -> Iterator[Running]:
    """``manage.py runserver`` of ``host`` with ``settings``, its output in ``log_path``."""
    port = free_port()
    with log_path.open("a") as log:
        server = subprocess.Popen(
            [str(host.venv / "bin" / "python"), "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
            cwd=host.project, env={**host_environment(), "DJANGO_SETTINGS_MODULE": settings},
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: server.poll() is not None or answers(base + "/"), 60, "the host answering")
        assert server.poll() is None, log_path.read_text()
        yield Running(base, server, log_path)
    finally:
        if server.poll() is None:
            server.terminate()
        server.wait(30)


def answers(url: str) -> bool:
    try:
        return visit(url) == 200
    except OSError:
        return False


def visit(url: str) -> int:
    request = urllib.request.Request(url, headers={"User-Agent": CHROME, "Referer": "https://duckduckgo.com/"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(response.status)


def visit_all(base: str, paths: list[str]) -> None:
    with ThreadPoolExecutor(4) as pool:
        assert set(pool.map(lambda path: visit(base + path), paths)) == {200}


def proc_status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}


def rss_and_threads(pid: int) -> tuple[int, int]:
    status = proc_status(pid)
    return int(status["VmRSS"].split()[0]) * 1024, int(status["Threads"])


def without_access_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if not ACCESS_LINE.search(line)]


# --- the tests ----------------------------------------------------------------------------
@pytest.mark.parametrize("django", DJANGOS)
def test_the_install_is_small_and_pulls_in_nothing_of_the_server(
    hosts: dict[str, Host], django: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Prints what the wheel added to a fresh Django environment, and the packages installed."""
    host = hosts[django]
    listed = json.loads(host.python("-m", "pip", "list", "--format", "json").stdout)
    names = {item["name"].lower() for item in listed}
    django_alone, with_capture = host.installed_bytes
    with capsys.disabled():  # what a host pays, in every run's log
        print(
            f"\nfootfall-capture in a Django {django} host: +{(with_capture - django_alone) / 1e6:.1f} MB installed "
            f"beyond Django ({django_alone / 1e6:.1f} -> {with_capture / 1e6:.1f} MB); installed: "
            + ", ".join(sorted(f"{item['name']} {item['version']}" for item in listed))
        )
    assert "footfall-capture" in names
    assert with_capture - django_alone <= MOST_INSTALLED_BYTES
    assert not names & (SERVER_ONLY | KAFKA_EXTRA)
    assert not {"footfall", "api", "dashboard", "realtime", "collector"} & names


@pytest.mark.parametrize("django", DJANGOS)
def test_the_host_gains_no_table_and_no_command(hosts: dict[str, Host], django: str) -> None:
    host = hosts[django]
    host.python("manage.py", "migrate", "--noinput")
    tables = host.python(
        "-c", "import sqlite3; print('\\n'.join(r[0] for r in sqlite3.connect('db.sqlite3').execute("
        "\"select name from sqlite_master where type='table'\")))",
    ).stdout.split()  # fmt: skip
    assert "auth_user" in tables  # the host's own tables are there
    assert not [t for t in tables if "footfall" in t or t.startswith(("collector_", "dashboard_"))]
    commands = set(host.python("manage.py", "help", "--commands").stdout.split())
    assert "migrate" in commands
    assert not commands & SERVER_COMMANDS
    assert "footfall" not in host.python("manage.py", "help").stdout.lower()


@pytest.mark.parametrize("django", DJANGOS)
def test_page_views_reach_the_collector_over_http_at_a_small_cost(
    hosts: dict[str, Host], django: str, server_site: ServerSite, collector: Collector, topic: str,
    realtime: None, cfg: Config, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """The collector enriches what the host sent (browser, referrer); the realtime API counts
    each page view once. The same number of page views through a copy of the site without
    the middleware gives the memory and threads it adds."""
    host = hosts[django]
    prefix = f"/d{django.replace('.', '')}-"
    tail = TopicTail(cfg, topic)
    plain = host.settings_module("settings_plain", 'MIDDLEWARE = [m for m in MIDDLEWARE if "footfall" not in m]\n')
    figures = {}
    try:
        for settings, name in ((plain, "without"), ("hostsite.settings", "with")):
            with run_host(host, host.project / f"server-{name}.log", settings) as running:
                visit_all(running.base, [f"{prefix}{name}-{n % 20}" for n in range(300)])
                time.sleep(2)  # the middleware's threads have sent what they had
                figures[name] = rss_and_threads(running.process.pid)
                assert "Traceback" not in running.log.read_text()
        sent = Counter(f"{prefix}with-{n % 20}" for n in range(300))
        wait_for(lambda: page_counts(collector, server_site, f"{prefix}with-") == sent, 60,
                 "every page view counted once in the realtime API")  # fmt: skip
        event = decode(tail.read(lambda m: b"with-0" in m.value(), 1, timeout=30)[0].value())
    finally:
        tail.close()
    assert (event.site_id, event.type, event.path, event.host) == (server_site.site_id, "pageview", f"{prefix}with-0",
                                                                   "127.0.0.1")  # fmt: skip
    assert (event.ref_domain, event.ref_type, event.ua.browser) == ("duckduckgo.com", "search", "Chrome")
    assert event.visitor_id
    assert page_counts(collector, server_site, f"{prefix}without-") == Counter()
    (rss_without, threads_without), (rss_with, threads_with) = figures["without"], figures["with"]
    with capsys.disabled():
        print(f"\nDjango {django} runserver after 300 page views: RSS {rss_without / 1e6:.1f} MB without the "
              f"middleware, {rss_with / 1e6:.1f} MB with it (+{(rss_with - rss_without) / 1e6:.1f} MB); "
              f"threads {threads_without} -> {threads_with}")  # fmt: skip
    assert rss_with - rss_without <= MOST_RSS_GROWTH_BYTES
    assert threads_with - threads_without <= MOST_NEW_THREADS


@pytest.fixture(scope="module")
def kafka_host(hosts: dict[str, Host], wheels: Wheels) -> Host:
    """The Django 5.2 host with the ``kafka`` extra installed too (after its size was measured)."""
    host = hosts["5.2"]
    pip = [str(host.venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, f"{wheels.capture}[kafka]"], check=True, timeout=600)
    return host


def kafka_settings(host: Host, name: str, servers: str, cfg: Config) -> str:
    """A settings module of ``host`` for the Kafka transport, against ``servers``."""
    return host.settings_module(name, (
        "del FOOTFALL_COLLECTOR_URL, FOOTFALL_INGEST_KEY_FILE  # the Kafka transport instead\n"
        f'FOOTFALL_KAFKA_BOOTSTRAP_SERVERS = "{servers}"\n'
        f'FOOTFALL_REDIS_URL = "{cfg.redis_url}"\n'
        f'FOOTFALL_SPOOL_DIR = "{host.project / f"spool-{name}"}"\n'
    ))  # fmt: skip


def test_nothing_is_lost_across_a_collector_outage_or_a_sigterm_and_logs_stay_quiet(
    hosts: dict[str, Host], kafka_host: Host, server_site: ServerSite, collector: Collector, topic: str,
    realtime: None, cfg: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Both hosts run while the collector is stopped: the 5.2 host gets 30 minutes' worth of page
    views and keeps running; the 4.2 host gets its share and is stopped by a SIGTERM during the
    outage, then started again once the collector is back. Meanwhile a site whose Kafka is down
    (the Kafka transport against a closed port) runs too. Each site's log lines are counted over
    two minutes of its outage; afterwards every page view is in the realtime API and the archive,
    once."""
    newer, older = hosts["5.2"], hosts["4.2"]
    dead_kafka = kafka_settings(kafka_host, "settings_kafka_down", f"127.0.0.1:{free_port()}", cfg)
    outage_views = {"5.2": [f"/o52-p{n % 30}" for n in range(OUTAGE_VIEWS)],
                    "4.2": [f"/o42-p{n % 30}" for n in range(300)]}  # fmt: skip
    trickle: list[str] = []
    with (
        run_host(newer, tmp_path / "newer.log") as staying,
        run_host(kafka_host, tmp_path / "kafka-down.log", dead_kafka) as kafka_down,
    ):
        with run_host(older, tmp_path / "older.log") as stopping:
            visit_all(staying.base, ["/o52-before"])
            visit_all(stopping.base, ["/o42-before"])
            wait_for(lambda: sum(page_counts(collector, server_site, "/o").values()) == 2, 60, "both hosts delivering")
            assert visit(kafka_down.base + "/kafka-down") == 200

            collector.stop()
            visit_all(staying.base, outage_views["5.2"])
            visit_all(stopping.base, outage_views["4.2"])
            stopping.process.send_signal(signal.SIGTERM)  # runserver has no handler: the middleware's spools first
            assert stopping.process.wait(30) == -signal.SIGTERM
        assert any((older.project / "spool").glob("*.spool")), "the 4.2 host spooled nothing at its SIGTERM"

        wait_for(lambda: any("spooling events" in line for line in staying.lines()), 60, "the outage logged")
        wait_for(lambda: any("Kafka unreachable" in line for line in kafka_down.lines()), 60, "Kafka's outage logged")
        before = {"collector down": len(staying.lines()), "Kafka down": len(kafka_down.lines())}
        window_end = time.monotonic() + WINDOW_S
        while time.monotonic() < window_end:  # a page view every 2 s on the staying host meanwhile
            trickle.append("/o52-trickle")
            visit_all(staying.base, trickle[-1:])
            time.sleep(2)
        during = {
            "collector down": without_access_lines(staying.lines()[before["collector down"] :]),
            "Kafka down": without_access_lines(kafka_down.lines()[before["Kafka down"] :]),
        }
        collector.start()
        with run_host(older, tmp_path / "older-again.log"):
            expected = Counter(["/o52-before", *outage_views["5.2"], *trickle, "/o42-before", *outage_views["4.2"]])
            wait_for(lambda: page_counts(collector, server_site, "/o") == expected, 180,
                     "every page view of the outage counted once")  # fmt: skip
        logs = staying.log.read_text() + (tmp_path / "older.log").read_text()
    with capsys.disabled():
        for what, lines in during.items():
            print(f"\nhost site with {what}: {len(lines)} log lines in {WINDOW_S:.0f} s: {lines}")
    for what, lines in during.items():
        assert len(lines) <= MOST_LINES_A_MINUTE * WINDOW_S / 60, (what, lines)
    assert "Traceback" not in logs
    assert any((kafka_host.project / "spool-settings_kafka_down").glob("*.spool"))  # the Kafka-down page view waits

    # The archive: every event of the topic once, the outage's among them.
    on_topic = topic_event_ids(cfg, topic)
    assert set(on_topic.values()) == {1}, [e for e, n in on_topic.items() if n > 1][:5]
    archived = archive_paths(replace(cfg, archive_url=(tmp_path / "archive").as_uri()), topic, len(on_topic))
    ids = Counter(event_id for event_id, _ in archived)
    assert set(ids.values()) == {1}
    assert Counter(path for _, path in archived if path.startswith("/o")) == expected


def archive_paths(cfg: Config, topic: str, expected: int) -> list[tuple[str, str]]:
    """Archive ``topic`` (``expected`` events) into ``cfg``'s archive; (event id, path) of each row."""
    archive_topic(cfg, topic, expected)
    rows = []
    for path in Archive(cfg.archive_url).root.glob("site_id=*/date=*/hour=*/part-*.parquet"):
        table = pq.read_table(path, columns=["event_id", "path"])
        rows += zip(table.column("event_id").to_pylist(), table.column("path").to_pylist(), strict=True)
    return rows


def test_the_kafka_transport_delivers_also_while_redis_is_down(kafka_host: Host, cfg: Config) -> None:
    """For an operator's own sites: the first page view fetches the salts; with Redis then
    stopped, every page view still arrives on Kafka, hashed with the same salt."""
    settings = kafka_settings(kafka_host, "settings_kafka", cfg.kafka_bootstrap_servers, cfg)
    tail = TopicTail(cfg, cfg.events_topic)
    try:
        with run_host(kafka_host, kafka_host.project / "kafka.log", settings) as running:
            assert visit(f"{running.base}/welcome") == 200
            [first] = [decode(m.value()) for m in tail.read(of_path("/welcome"), 1, timeout=60)]
            assert (first.type, first.path, first.host) == ("pageview", "/welcome", "127.0.0.1")
            assert (first.ref_domain, first.ref_type, first.ua.browser) == ("duckduckgo.com", "search", "Chrome")
            assert first.url == f"{running.base}/welcome"
            assert first.visitor_id

            stack("stop", "redis")
            try:
                pages = [f"/down-{n}" for n in range(10)]
                visit_all(running.base, pages)
                during = [decode(m.value()) for m in tail.read(of_path("/down-"), len(pages), timeout=60)]
            finally:
                stack("start", "redis")
            assert "Traceback" not in running.log.read_text()
    finally:
        tail.close()
    assert sorted(e.path for e in during) == sorted(pages)
    assert {e.visitor_id for e in during} == {first.visitor_id}


def of_path(prefix: str) -> Callable[[object], bool]:
    """Whether a message is a page view under ``prefix`` (the readiness probe's are not)."""
    return lambda message: (decode(message.value()).path or "").startswith(prefix)  # type: ignore[attr-defined]
