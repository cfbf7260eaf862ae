"""The capture library installed from its wheel into a new Django site, as a host would.

For each supported Django line the wheel built from ``host/`` goes into a fresh virtual
environment outside the checkout; ``django-admin startproject`` makes the host, and the
settings of docs/host-package.md are added. The host then runs with ``DEBUG`` off and its own
SECRET_KEY, gains no table and no command, and its page views reach the real Kafka topic, also
while the stack's Redis is stopped. What the install pulled in is printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from footfall.config import Config
from footfall_capture.events import decode
from tests.integration.kafka_tail import TopicTail
from tests.integration.packaging.conftest import Wheels
from tests.ports import free_port
from tests.reliability.faults import stack, wait_for

# What a host must never be made to install: the server's heavy parts.
SERVER_ONLY = {"pyarrow", "pyspark", "dash", "plotly", "celery", "pymongo", "djangorestframework", "gunicorn"}
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


@dataclass
class Host:
    """A Django site made by ``startproject`` in its own virtual environment."""

    venv: Path
    project: Path
    site_id: str

    def python(self, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv / "bin" / "python"), *args],
            cwd=self.project, env=host_environment(), capture_output=True, text=True, check=True, timeout=300,
            **kwargs,  # type: ignore[arg-type]
        )  # fmt: skip


def host_environment() -> dict[str, str]:
    """A host's own environment: none of the stack's variables, DEBUG off, no SECRET_KEY."""
    return {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "DEBUG": "0", "PYTHONUNBUFFERED": "1"}


@pytest.fixture(scope="module", params=["4.2", "5.2"], ids=lambda v: f"django-{v}")
def host(request: pytest.FixtureRequest, wheels: Wheels, cfg: Config, tmp_path_factory: pytest.TempPathFactory,
         ) -> Host:  # fmt: skip
    """A fresh venv with the wheel and Django ``request.param``, and a project set up as docs/host-package.md says."""
    return make_host(tmp_path_factory.mktemp(f"host-django-{request.param}"), wheels, cfg, request.param)


def make_host(root: Path, wheels: Wheels, cfg: Config, django: str) -> Host:
    """A venv in ``root`` with the wheel and Django ``django``, and a project set up as docs/host-package.md says."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, str(wheels.capture), f"django~={django}.0"], check=True, timeout=600)
    subprocess.run([str(venv / "bin" / "django-admin"), "startproject", "hostsite", str(root)], check=True)
    host = Host(venv, root, f"host-{uuid.uuid4().hex[:8]}")
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
FOOTFALL_SITE_ID = "{host.site_id}"
FOOTFALL_KAFKA_BOOTSTRAP_SERVERS = "{cfg.kafka_bootstrap_servers}"
FOOTFALL_REDIS_URL = "{cfg.redis_url}"
FOOTFALL_SPOOL_DIR = "{root / "spool"}"
"""
    )
    return host


def test_the_install_pulls_in_nothing_of_the_server(host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    """Prints the installed package's size and what it depends on."""
    listed = json.loads(host.python("-m", "pip", "list", "--format", "json").stdout)
    names = {item["name"].lower() for item in listed}
    site_packages = next((host.venv / "lib").glob("python3.*/site-packages"))
    size = sum(p.stat().st_size for p in site_packages.rglob("*") if p.is_file())
    own = sum(p.stat().st_size for p in (site_packages / "footfall_capture").rglob("*") if p.is_file())
    with capsys.disabled():  # what a host pays, in every run's log
        print(
            f"\nfootfall-capture in a Django host: the package {own / 1e3:.0f} kB, "
            f"the environment {size / 1e6:.1f} MB; installed: "
            + ", ".join(sorted(f"{item['name']} {item['version']}" for item in listed))
        )
    assert "footfall-capture" in names
    assert not names & SERVER_ONLY
    assert not {"footfall", "api", "dashboard", "realtime", "collector"} & names


def test_the_host_gains_no_table_and_no_command(host: Host) -> None:
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


@pytest.fixture(scope="module")
def running_host(host: Host) -> Iterator[str]:
    """The host's own development server (DEBUG off), answering on a free port."""
    with run_host(host, host.project / "server.log") as base:
        yield base


@contextlib.contextmanager
def run_host(host: Host, log_path: Path, settings: str = "hostsite.settings") -> Iterator[str]:
    """``manage.py runserver`` of ``host`` with ``settings``, its output in ``log_path``; its URL."""
    port = free_port()
    log = log_path.open("w")
    server = subprocess.Popen(
        [str(host.venv / "bin" / "python"), "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=host.project, env={**host_environment(), "DJANGO_SETTINGS_MODULE": settings},
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: server.poll() is not None or answers(base + "/"), 60, "the host answering")
        assert server.poll() is None, log_path.read_text()
        yield base
    finally:
        server.terminate()
        server.wait(30)
        log.close()


def answers(url: str) -> bool:
    try:
        return visit(url) == 200
    except OSError:
        return False


def visit(url: str) -> int:
    request = urllib.request.Request(url, headers={"User-Agent": CHROME, "Referer": "https://duckduckgo.com/"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(response.status)


def test_page_views_reach_kafka_also_while_redis_is_down(host: Host, running_host: str, cfg: Config) -> None:
    """The first page view fetches the salts; with Redis then stopped, every page view still
    arrives, hashed with the same salt."""
    tail = TopicTail(cfg, cfg.events_topic)
    try:
        assert visit(f"{running_host}/welcome") == 200
        [first] = [decode(m.value()) for m in tail.read(lambda m: of_host(m, host, "/welcome"), 1, timeout=60)]
        assert (first.type, first.path, first.host, first.site_id) == (
            "pageview",
            "/welcome",
            "127.0.0.1",
            host.site_id,
        )
        assert (first.ref_domain, first.ref_type, first.ua.browser) == ("duckduckgo.com", "search", "Chrome")
        assert first.url == f"{running_host}/welcome"
        assert first.visitor_id

        stack("stop", "redis")
        try:
            pages = [f"down-{n}" for n in range(10)]
            assert [visit(f"{running_host}/{page}") for page in pages] == [200] * len(pages)
            during = [
                decode(m.value()) for m in tail.read(lambda m: of_host(m, host, "/down-"), len(pages), timeout=60)
            ]
        finally:
            stack("start", "redis")
        assert sorted(e.path for e in during) == sorted(f"/{page}" for page in pages)
        assert {e.visitor_id for e in during} == {first.visitor_id}
        assert "Traceback" not in (host.project / "server.log").read_text()
    finally:
        tail.close()


def of_host(message: object, host: Host, path_prefix: str) -> bool:
    """Whether ``message`` is a page view of ``host`` under ``path_prefix`` (the readiness
    probe's page views are not)."""
    event = decode(message.value())  # type: ignore[attr-defined]
    return event.site_id == host.site_id and (event.path or "").startswith(path_prefix)
