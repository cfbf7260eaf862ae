"""The shipped nginx proxy (deploy/proxy/nginx) on this machine's nginx (Debian's, installed by
``stack start deploy-tools``): its site and upstream files as they are, with a throw-away
certificate, the test's folders and, to run it, the test's ports."""

from __future__ import annotations

import os
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


def proxy_config(folder: Path, ports: Ports | None = None) -> Path:
    """nginx.conf in ``folder`` holding footfall.conf and upstream.conf; with ``ports``, listening
    on 127.0.0.1 only and sending to the test's web and collector processes."""
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
    upstream = (NGINX / "upstream.conf").read_text()
    if ports is not None:
        site = site.replace("    listen [::]:443 ssl;\n", "").replace("    listen [::]:80;\n", "")
        site = site.replace("listen 443 ssl;", f"listen 127.0.0.1:{ports.https} ssl;")
        site = site.replace("listen 80;", f"listen 127.0.0.1:{ports.http};")
        upstream = upstream.replace("127.0.0.1:8000", f"127.0.0.1:{ports.web}")
        upstream = upstream.replace("127.0.0.1:8001", f"127.0.0.1:{ports.collector}")
    (folder / "footfall.conf").write_text(site)
    (folder / "upstream.conf").write_text(upstream)
    temp_paths = " ".join(f"{kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi",
                                                                           "uwsgi", "scgi"))  # fmt: skip
    conf = folder / "nginx.conf"
    conf.write_text(
        f"pid {folder / 'nginx.pid'};\nerror_log stderr;\nevents {{}}\n"
        f"http {{ {temp_paths}\n include {folder / 'footfall.conf'};\n include {folder / 'upstream.conf'};\n}}\n"
    )
    return conf
