"""The web server's access log, as the local stack's supervisord.conf runs gunicorn (with the
settings Footfall ships, ``footfall_server.gunicorn_config``), leaves the client's address out."""

from __future__ import annotations

import configparser
import datetime as dt
import logging
import shlex
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from gunicorn.app.wsgiapp import WSGIApplication
from gunicorn.glogging import Logger

REPO = Path(__file__).resolve().parents[2]
CLIENT = "81.2.69.160"
PROXIED = "93.184.216.34"


def web_argv() -> list[str]:
    """gunicorn's arguments in ``[program:web]`` of deploy/local/supervisord.conf."""
    conf = configparser.RawConfigParser()
    conf.read(REPO / "deploy" / "local" / "supervisord.conf")
    argv = shlex.split(conf.get("program:web", "command").replace("%(ENV_FOOTFALL_WEB_PORT)s", "8000"))
    return argv[argv.index("gunicorn") + 1 :]


def access_line(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """The access-log line gunicorn configured by ``argv`` writes for one proxied request."""
    monkeypatch.setattr(sys, "argv", ["gunicorn", *argv])
    app = WSGIApplication("%(prog)s [OPTIONS] [APP_MODULE]")
    logger = Logger(app.cfg)
    assert logger.access_log_enabled, "the stack's web server keeps an access log"
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    logger.access_log.addHandler(handler)
    headers = [("X-FORWARDED-FOR", f"{PROXIED}, {CLIENT}"), ("USER-AGENT", "Mozilla/5.0"), ("REFERER", "https://t.co/")]
    req = SimpleNamespace(headers=headers, method="GET", uri="/p.gif?site_id=demo", path="/p.gif",
                          query="site_id=demo", version=(1, 1))  # fmt: skip
    resp = SimpleNamespace(status="202 Accepted", sent=43, headers=[], response_length=43)
    environ = {"REMOTE_ADDR": CLIENT, "HTTP_X_FORWARDED_FOR": f"{PROXIED}, {CLIENT}", "REQUEST_METHOD": "GET",
               "RAW_URI": "/p.gif?site_id=demo", "SERVER_PROTOCOL": "HTTP/1.1"}  # fmt: skip
    logger.access(resp, req, environ, dt.timedelta(milliseconds=3))
    logger.access_log.removeHandler(handler)
    assert len(lines) == 1
    return lines[0]


def test_the_stacks_access_log_has_no_client_address(monkeypatch: pytest.MonkeyPatch) -> None:
    line = access_line(web_argv(), monkeypatch)
    assert "GET /p.gif?site_id=demo" in line
    assert "202" in line
    assert CLIENT not in line
    assert PROXIED not in line


def test_gunicorns_default_format_would_log_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: gunicorn's own format writes the address."""
    assert CLIENT in access_line(["--access-logfile", "-", "footfall_server.wsgi"], monkeypatch)
