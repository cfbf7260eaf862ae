"""The server as an operator installs it: both wheels built from this checkout, the server's
installed without extras into a fresh virtualenv outside the checkout, run by gunicorn in
production mode behind a (pretended) TLS proxy against the test stack's services.

Proves the wheel carries what the server serves (tracker, templates, migrations), that
collectstatic + WhiteNoise serve the admin's and Swagger UI's files, that the server starts
without the ``dashboard`` extra, and that it keeps its data outside site-packages.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from footfall.config import Config
from tests.integration.chromium import chromium
from tests.integration.packaging.conftest import REPO, Wheels
from tests.ports import free_port

SCREENSHOTS = REPO / "artifacts" / "screenshots"
# SECURE_SSL_REDIRECT is on in production: the requests come "through" a TLS proxy.
PROXY_HEADERS = {"X-Forwarded-Proto": "https"}


@dataclass(frozen=True)
class Server:
    url: str
    venv: Path
    home: Path  # the server's $HOME: its default data directory lies under it
    site_packages: Path


def run(argv: list[str], **kwargs: object) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, **kwargs)  # type: ignore[call-overload]
    assert proc.returncode == 0, f"{argv} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout


def get(url: str) -> tuple[int, str, bytes]:
    """Status, Content-Type and body of a GET (error statuses included)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=PROXY_HEADERS), timeout=30) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read()


@pytest.fixture(scope="module")
def server(cfg: Config, wheels: Wheels, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The installed server, migrated, its static files collected, answering on a free port."""
    root = tmp_path_factory.mktemp("server-wheel")
    assert not root.is_relative_to(REPO)
    venv, home, workdir = root / "venv", root / "home", root / "run"
    for folder in (home, workdir):
        folder.mkdir()
    # As docs/server-wheel.md and the Containerfile install it: the locked requirements, hashes
    # checked, then both wheels by path with nothing left to resolve (PyPI holds neither project).
    # No extras: the server must run without Dash and Spark.
    uv, python = str(Path(sys.executable).parent / "uv"), str(venv / "bin" / "python")
    requirements = root / "requirements.txt"
    run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)])
    run([uv, "export", "--quiet", "--locked", "--no-dev", "--no-emit-project", "--no-emit-package", "footfall-capture",
         "--project", str(REPO), "--output-file", str(requirements)])  # fmt: skip
    run([uv, "pip", "install", "--quiet", "--python", python, "--require-hashes", "-r", str(requirements)])
    run([uv, "pip", "install", "--quiet", "--python", python, "--no-deps", str(wheels.capture), str(wheels.server)])
    installed = run([uv, "pip", "list", "--python", python, "--format", "freeze"]).split()
    assert not any(line.startswith(("dash==", "pyspark==", "setuptools==", "pip==")) for line in installed), installed

    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(home),
        "DJANGO_SETTINGS_MODULE": "footfall_server.settings",
        "FOOTFALL_ENV": "production",
        "SECRET_KEY": "wheel-test-" + "k" * 60,
        "ALLOWED_HOSTS": "127.0.0.1",
        "FOOTFALL_TRUSTED_PROXIES": "1",  # the test plays the TLS proxy: it sends X-Forwarded-Proto
        "KAFKA_BOOTSTRAP_SERVERS": cfg.kafka_bootstrap_servers,
        "REDIS_URL": cfg.redis_url,
        "MONGO_URL": cfg.mongo_url,
        "MONGO_DB": cfg.mongo_db,
    }
    site_packages = Path(run([str(venv / "bin" / "python"), "-c", "import footfall; print(footfall.__path__[0])"],
                             env=env, cwd=workdir).strip()).parent  # fmt: skip
    assert site_packages.is_relative_to(venv), site_packages
    admin = str(venv / "bin" / "django-admin")
    run([admin, "check"], env=env, cwd=workdir)
    run([admin, "migrate", "--noinput", "-v0"], env=env, cwd=workdir)
    run([admin, "collectstatic", "--noinput", "-v0"], env=env, cwd=workdir)

    port = free_port()
    log = (root / "gunicorn.log").open("w")
    proc = subprocess.Popen(
        [str(venv / "bin" / "gunicorn"), "footfall_server.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1",
         "--threads", "4"],
        env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not _answers(url):
            assert proc.poll() is None, (root / "gunicorn.log").read_text()[-4000:]
            assert time.monotonic() < deadline, (root / "gunicorn.log").read_text()[-4000:]
            time.sleep(0.5)
        yield Server(url, venv, home, site_packages)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _answers(url: str) -> bool:
    try:
        get(f"{url}/api/v1/health")
    except OSError:
        return False
    return True


def test_tracker_is_served_as_javascript(server: Server) -> None:
    status, content_type, body = get(f"{server.url}/footfall.js")
    assert status == 200
    assert content_type.startswith("application/javascript")
    assert b"sendBeacon" in body


def test_admin_css_is_served_by_whitenoise(server: Server) -> None:
    status, content_type, body = get(f"{server.url}/static/admin/css/base.css")
    assert status == 200
    assert content_type.startswith("text/css")
    assert b"body" in body


def test_swagger_ui_renders_in_chromium(server: Server) -> None:
    """/api/v1/docs draws Swagger UI from the locally served sidecar files and the API's schema."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with chromium() as browser:
        context = browser.new_context(extra_http_headers=PROXY_HEADERS, viewport={"width": 1366, "height": 860})
        page = context.new_page()
        failed: list[str] = []
        page.on("requestfailed", lambda request: failed.append(request.url))
        page.on("response", lambda resp: resp.status >= 400 and failed.append(f"{resp.status} {resp.url}"))
        page.goto(f"{server.url}/api/v1/docs")
        page.wait_for_selector(".swagger-ui .information-container .title", timeout=45_000)
        page.wait_for_selector(".swagger-ui .opblock-summary-path", timeout=45_000)
        title = page.inner_text(".swagger-ui .information-container .title")
        paths = page.eval_on_selector_all(".swagger-ui .opblock-summary-path", "els => els.map(e => e.innerText)")
        page.screenshot(path=str(SCREENSHOTS / "server-wheel-swagger-ui.png"), full_page=True)
        context.close()
    assert title.startswith("Footfall API")
    assert any(p.endswith("/timeseries") for p in paths), paths
    assert failed == []


def test_dashboard_without_its_extra_says_what_to_install(server: Server) -> None:
    status, _, body = get(f"{server.url}/dashboard/")
    assert status == 503
    assert b"pip install 'dash&lt;5,&gt;=3' 'plotly&lt;7,&gt;=5.24'" in body  # the wheel's own metadata
    assert b"footfall[dashboard]" not in body  # a name the project does not hold on PyPI


def test_data_lives_outside_the_installed_package(server: Server) -> None:
    data = server.home / ".local" / "share" / "footfall"
    assert (data / "footfall.sqlite3").is_file()
    assert (data / "static" / "admin" / "css" / "base.css").is_file()
    assert not (server.site_packages / "var").exists()
    assert not list(server.site_packages.rglob("*.sqlite3"))
