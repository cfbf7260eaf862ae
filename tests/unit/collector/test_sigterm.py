"""A process with no SIGTERM handler of its own flushes before the signal ends it; one with a
handler keeps it untouched."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

PROGRAM = """
import signal, sys, time
from pathlib import Path
from footfall_capture.sigterm import flush_on_sigterm

if sys.argv[2] == "own":
    signal.signal(signal.SIGTERM, lambda *_: (Path(sys.argv[1]).write_text("own"), sys.exit(0)))
installed = flush_on_sigterm(lambda: Path(sys.argv[1]).write_text("flushed"))
print("installed" if installed else "left alone", flush=True)
while True:
    time.sleep(0.05)
"""


def run_and_terminate(tmp_path: Path, mode: str) -> tuple[str, int, str]:
    marker = tmp_path / "marker"
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(PROGRAM), str(marker), mode],
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None
    said = proc.stdout.readline().strip()
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(10)
    deadline = time.monotonic() + 5
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return said, code, marker.read_text()


def test_an_unhandled_sigterm_flushes_then_ends_the_process_as_before(tmp_path: Path) -> None:
    assert run_and_terminate(tmp_path, "bare") == ("installed", -signal.SIGTERM, "flushed")


def test_a_servers_own_handler_is_left_alone(tmp_path: Path) -> None:
    assert run_and_terminate(tmp_path, "own") == ("left alone", 0, "own")
