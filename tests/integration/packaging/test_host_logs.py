"""A host site whose Kafka is down stays quiet: at most 2 log lines a minute, counted over
2 minutes, where librdkafka alone wrote about 770 (footfall_capture/quiet_log.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from footfall.config import Config
from tests.integration.packaging.conftest import Wheels
from tests.integration.packaging.test_host_package import Host, make_host, run_host, visit
from tests.ports import free_port
from tests.reliability.faults import wait_for

WINDOW_S = 120.0
MOST_LINES_A_MINUTE = 2


@pytest.fixture(scope="module")
def host(wheels: Wheels, cfg: Config, tmp_path_factory: pytest.TempPathFactory) -> Host:
    return make_host(tmp_path_factory.mktemp("host-logs"), wheels, cfg, "5.2")


def test_a_site_whose_kafka_is_down_logs_at_most_two_lines_a_minute(
    host: Host, capsys: pytest.CaptureFixture[str]
) -> None:
    """One page view starts the sink's producer against a closed port; once the site has said
    Kafka is unreachable, every line it writes in the next two minutes is counted. Its page
    view is spooled meanwhile."""
    spool = host.project / "spool-kafka-down"
    (host.project / "hostsite" / "settings_kafka_down.py").write_text(
        "from .settings import *  # noqa: F403\n"
        f'FOOTFALL_KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:{free_port()}"  # nobody listens\n'
        f'FOOTFALL_SPOOL_DIR = "{spool}"\n'
    )
    log_path = host.project / "kafka-down.log"
    with run_host(host, log_path, "hostsite.settings_kafka_down") as base:
        assert visit(f"{base}/hello") == 200
        wait_for(lambda: any("Kafka unreachable" in line for line in lines(log_path)), 60, "the outage logged")
        before = lines(log_path)
        time.sleep(WINDOW_S)  # the window the lines are counted over
        during = lines(log_path)[len(before) :]
    with capsys.disabled():
        print(f"\nhost site with Kafka down: {len(during)} log lines in {WINDOW_S:.0f} s: {during}")
    assert len(during) <= MOST_LINES_A_MINUTE * WINDOW_S / 60, during
    assert any(spool.glob("*.spool"))  # the page view waits there (after librdkafka's 30 s message timeout)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()
