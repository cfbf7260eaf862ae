"""The local multi-node cluster (``deploy/local/cluster.sh``) as a fixture: started on its own
ports and state directory beside the test stack, stopped afterwards with every process.

Ports: ``FOOTFALL_TEST_CLUSTER_PORT`` (default 31092) and up: Kafka's three nodes on it to
+5, Redis +10, the Mongo-wire server +11, the web server +12, MinIO +13, Spark's master +30
and +31. The archive is on the cluster's MinIO; ``FOOTFALL_TEST_CLUSTER_ARCHIVE_URL`` puts it
elsewhere, as ``FOOTFALL_CLUSTER_ARCHIVE_URL`` does for ``cluster.sh``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from footfall.config import Config, load_config

REPO = Path(__file__).resolve().parents[3]
CLUSTER_SH = REPO / "deploy" / "local" / "cluster.sh"
# Variables that point at the test stack; the cluster's come from ``cluster.sh env``.
OTHER_STACK = {"ARCHIVE_URL", "DATABASE_URL", "CELERY_BROKER_URL", "FOOTFALL_CACHE_URL", "FOOTFALL_SPARK_PORT",
               "FOOTFALL_MINIO_PORT"}  # fmt: skip


@dataclass(frozen=True)
class LocalCluster:
    """A running cluster: the environment that points Footfall at it, and its configuration."""

    env: dict[str, str]
    cfg: Config

    @property
    def web_port(self) -> int:
        return int(self.env["FOOTFALL_WEB_PORT"])

    def stack(self, *args: str) -> None:
        """``python -m deploy.local.stack ARGS`` on the cluster (``kill kafka-broker-2``, ``start kafka``)."""
        _run([sys.executable, "-m", "deploy.local.stack", *args], self.env, timeout=600)

    def manage(self, *args: str) -> str:
        """``manage.py ARGS`` with the cluster's settings; its output."""
        return _run([sys.executable, "manage.py", *args], self.env, timeout=900)


def _run(argv: list[str], env: dict[str, str], timeout: float) -> str:
    out = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise AssertionError(f"{shlex.join(argv)} failed ({out.returncode}):\n{(out.stdout + out.stderr)[-4000:]}")
    return out.stdout


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """``cluster.sh up`` on the test ports, ``cluster.sh down`` afterwards (whatever happened)."""
    base = int(os.environ.get("FOOTFALL_TEST_CLUSTER_PORT", "31092"))
    state = Path(tempfile.mkdtemp(prefix="footfall-cluster-"))
    env = {k: v for k, v in os.environ.items() if k not in OTHER_STACK}
    env.update(
        FOOTFALL_CLUSTER_STATE_DIR=str(state),
        FOOTFALL_CLUSTER_KAFKA_PORT=str(base),
        FOOTFALL_CLUSTER_REDIS_PORT=str(base + 10),
        FOOTFALL_CLUSTER_MONGO_PORT=str(base + 11),
        FOOTFALL_CLUSTER_WEB_PORT=str(base + 12),
        FOOTFALL_CLUSTER_MINIO_PORT=str(base + 13),
        # The test's load comes from one address: no per-client limit.
        FOOTFALL_CLIENT_RATE="100000",
        FOOTFALL_CLIENT_BURST="100000",
        # This interpreter's virtualenv, which bootstrap.sh then only confirms.
        FOOTFALL_VENV=sys.prefix,
    )
    if os.environ.get("FOOTFALL_TEST_CLUSTER_ARCHIVE_URL"):
        env["FOOTFALL_CLUSTER_ARCHIVE_URL"] = os.environ["FOOTFALL_TEST_CLUSTER_ARCHIVE_URL"]
    try:
        _run([str(CLUSTER_SH), "up"], env, timeout=900)
        exports = _run([str(CLUSTER_SH), "env"], env, timeout=120)
        for line in exports.splitlines():
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = shlex.split(value)[0] if value else ""
        yield LocalCluster(env, load_config(env, REPO))
    finally:
        _run([str(CLUSTER_SH), "down"], env, timeout=600)
        shutil.rmtree(state, ignore_errors=True)
