"""The shipped nginx proxy (deploy/proxy/nginx) on this machine's nginx (Debian's, installed by
``stack start deploy-tools``): its site and upstream files as they are, with a throw-away
certificate, the test's folders and, to run it, the test's ports."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from deploy.local.services import DeployTools, StackConfig

NGINX = Path(__file__).resolve().parents[1] / "deploy" / "proxy" / "nginx"
SERVER_NAME = "stats.example.com"


@dataclass(frozen=True)
class Ports:
    https: int
    http: int
    web: int
    collector: int


def nginx_binary() -> Path:
    nginx = DeployTools(StackConfig.from_env(os.environ)).binary
    assert nginx.exists(), "nginx is missing: python -m deploy.local.stack start deploy-tools (test.sh does)"
    return nginx


def proxy_config(folder: Path, ports: Ports | None = None, collector_paths: tuple[str, ...] = ()) -> Path:
    """nginx.conf in ``folder`` holding footfall.conf and upstream.conf; with ``ports``, listening
    on 127.0.0.1 only and sending to the test's web and collector processes. ``collector_paths``
    (a deployment's FOOTFALL_TRACKER_PATH and FOOTFALL_COLLECT_PATH) join the collector's
    location, as docs/collector.md#your-own-domain says to add them."""
    openssl = shutil.which("openssl")
    assert openssl, "openssl is missing: python -m deploy.local.stack start deploy-tools (test.sh does)"
    tls = folder / "tls"
    tls.mkdir(parents=True)
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={SERVER_NAME}",
         "-keyout", str(tls / "privkey.pem"), "-out", str(tls / "fullchain.pem")],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    site = (NGINX / "footfall.conf").read_text().replace("/etc/nginx/tls", str(tls))
    site = site.replace("/var/log/nginx", str(folder))
    if collector_paths:
        names = "|".join(re.escape(path.removeprefix("/")) for path in collector_paths)
        shipped = "location ~ ^/(collect|p\\.gif|footfall\\.js)$"
        site = site.replace(shipped, shipped.replace(")$", f"|{names})$"))
        assert names in site, "footfall.conf's collector location changed: update the docs and this"
    upstream = (NGINX / "upstream.conf").read_text()
    if ports is not None:
        site = site.replace("    listen [::]:443 ssl;\n", "").replace("    listen [::]:80;\n", "")
        site = site.replace("listen 443 ssl;", f"listen 127.0.0.1:{ports.https} ssl;")
        site = site.replace("listen 80;", f"listen 127.0.0.1:{ports.http};")
        upstream = upstream.replace("127.0.0.1:8000", f"127.0.0.1:{ports.web}")
        upstream = upstream.replace("127.0.0.1:8001", f"127.0.0.1:{ports.collector}")
    (folder / "footfall.conf").write_text(site)
    (folder / "upstream.conf").write_text(upstream)
    return _nginx_conf(folder, f"include {folder / 'footfall.conf'};\n include {folder / 'upstream.conf'};")


def site_forwarding_config(folder: Path, port: int, footfall_https: int, certificate: Path) -> Path:
    """nginx.conf in ``folder`` for a tracked site (example.com on 127.0.0.1:``port``, plain HTTP)
    whose server block includes deploy/proxy/nginx/site-forwarding.conf as it is, forwarding to
    the Footfall proxy on ``footfall_https`` and trusting its throw-away ``certificate``."""
    folder.mkdir(parents=True)
    recipe = (NGINX / "site-forwarding.conf").read_text()
    recipe = recipe.replace("https://stats.example.com/", f"https://127.0.0.1:{footfall_https}/")
    recipe = recipe.replace("/etc/ssl/certs/ca-certificates.crt", str(certificate))
    (folder / "site-forwarding.conf").write_text(recipe)
    recipe_path = folder / "site-forwarding.conf"
    server = (f"server {{ listen 127.0.0.1:{port}; server_name example.com; access_log {folder / 'access.log'};\n"
              f" include {recipe_path}; }}")  # fmt: skip
    return _nginx_conf(folder, server)


def _nginx_conf(folder: Path, http_block: str) -> Path:
    temp_paths = " ".join(f"{kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi",
                                                                           "uwsgi", "scgi"))  # fmt: skip
    conf = folder / "nginx.conf"
    pid = folder / "nginx.pid"
    conf.write_text(f"pid {pid};\nerror_log stderr;\nevents {{}}\nhttp {{ {temp_paths}\n {http_block}\n}}\n")
    return conf
