"""CPU accounting from /proc, to tell on a shared machine whose CPU a run used.

Requests per second on a small, noisy machine move with whatever else runs on it; the
CPU seconds the server's processes spent per request do much less. Each measured run
records, from just before wrk starts until the events topic is quiet again: CPU of each
gunicorn's process group, of the Kafka broker, of wrk (a waited-for child), and the whole
machine's busy time; "other" is what the machine spent on anything else (other tenants).
Linux only (which is what the local stack supports).
"""

from __future__ import annotations

import os
import resource
from collections.abc import Mapping
from pathlib import Path

from deploy.local.checks import StackError
from deploy.local.services import StackConfig

TICK = os.sysconf("SC_CLK_TCK")


def group_seconds(pgid: int) -> float:
    """User + system CPU seconds of the live processes in process group ``pgid``."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended while we looked
        if int(fields[2]) == pgid:  # field 5 (pgrp); fields[0] is field 3 (state)
            ticks += int(fields[11]) + int(fields[12])  # fields 14 and 15: utime, stime
    return ticks / TICK


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent not idle since boot (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values) - idle) / TICK


def children_seconds() -> float:
    """CPU seconds of this process's waited-for children (the wrk runs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def stack_pid(service: str, stack_env: Mapping[str, str]) -> int | None:
    """The pid of a stack service, from the stack's supervisord (it leads its own process group)."""
    try:
        return StackConfig.from_env(stack_env).supervisor().pid(service)
    except StackError:
        return None


class CpuMeter:
    """Snapshots of CPU seconds per named process group, wrk and the machine."""

    def __init__(self, groups: Mapping[str, int | None]) -> None:
        self.groups = {name: pgid for name, pgid in groups.items() if pgid}

    def snapshot(self) -> dict[str, float]:
        snap = {name: group_seconds(pgid) for name, pgid in self.groups.items()}
        snap["wrk"] = children_seconds()
        snap["machine"] = machine_busy_seconds()
        return snap

    @staticmethod
    def delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
        spent = {name: round(after[name] - before[name], 3) for name in before}
        spent["other"] = round(spent["machine"] - sum(v for k, v in spent.items() if k != "machine"), 3)
        return spent
