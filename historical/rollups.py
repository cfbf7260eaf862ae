"""Running the rollup job: ``spark-submit`` of the module :mod:`spark_jobs.rollup`.

One code path for every master: ``local[*]`` runs Spark on this machine, ``spark://…``,
``yarn`` or ``k8s://…`` on a cluster; the driver runs here (client mode), so it reaches
MongoDB and reports each day it loaded as a JSON line in a progress file (its ``--progress``).
A failed job raises :class:`RollupFailed` with the end of Spark's output; documents of the
days it finished are complete, the rest are untouched or repaired by the next run (loads
replace whole days). After a successful run, :data:`historical.signals.rollup_finished` lets
the query layer reconcile the days.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from archive.schema import date_folder, utc_dates_for
from archive.spark_conf import (
    JVM_OPTIONS,
    SMALL_INPUT_BYTES,
    archive_spark_conf,
    jvm_conf,
    jvm_options,
    spark_properties_file,
)
from archive.store import Archive
from footfall.config import Config
from footfall.goals import FunnelSpec, GoalSpec
from footfall.models import Funnel, Goal, Site
from historical.progress import ProgressFile
from historical.signals import rollup_finished
from historical.store import MONGO_URL_VARIABLE, connect, has_clock_change, legacy_hour_days

REPO = Path(__file__).resolve().parent.parent
JOB_MODULE = "spark_jobs.rollup"
PROGRESS_POLL_S = 0.25  # how often a running job's progress file is read


class RollupFailed(RuntimeError):
    """The Spark job exited with an error; the message ends with its output."""


@dataclass
class RollupResult:
    days: list[tuple[str, str]] = field(default_factory=list)  # (site, day) loaded
    events: int = 0
    drift: dict[str, dict] = field(default_factory=dict)


def site_zones(site_ids: Sequence[str] | None = None) -> dict[str, str]:
    """``{site_id: time zone}`` of the given sites (all sites when None)."""
    sites = Site.objects.all() if not site_ids else Site.objects.filter(site_id__in=site_ids)
    zones = {s.site_id: s.timezone for s in sites}
    missing = set(site_ids or ()) - set(zones)
    if missing:
        raise ValueError(f"unknown site(s): {', '.join(sorted(missing))}")
    return zones


@contextlib.contextmanager
def definitions_file(specs: Mapping[str, Sequence[FunnelSpec | GoalSpec]] | None) -> Iterator[Path | None]:
    """A temporary file holding each site's goals or funnels (``specs``) as the job's
    ``--goals @file`` and ``--funnels @file`` read them (None when there are none): one
    argument may hold only 128 KiB on Linux, less than many sites' definitions take. The job's
    driver runs here (client mode), so it reads the file here."""
    data = {site: [spec.to_json() for spec in specs] for site, specs in sorted((specs or {}).items()) if specs}
    if not data:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="footfall-definitions-") as tmp:
        path = Path(tmp) / "definitions.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        yield path


def job_file() -> Path:
    """The file of :data:`JOB_MODULE`, found the way ``python -m`` finds it (a checkout or an
    installed wheel alike): spark-submit runs a Python file, not a module name. Named, not
    imported: the job is a layer above this one and runs in a process of its own."""
    spec = importlib.util.find_spec(JOB_MODULE)
    if spec is None or spec.origin is None:
        raise RollupFailed(f"the rollup job's module {JOB_MODULE} is not installed")
    return Path(spec.origin)


def spark_submit_command(
    cfg: Config,
    master: str,
    first: dt.date,
    last: dt.date,
    zones: dict[str, str],
    properties_file: Path | None = None,
    funnels_path: Path | None = None,
    goals_path: Path | None = None,
    progress_path: Path | None = None,
    jvm: str = JVM_OPTIONS,
) -> list[str]:
    """The ``spark-submit`` command line of the rollup of ``[first, last]`` for the sites of
    ``zones``, with their funnels and goals from the files of :func:`definitions_file`; the job
    appends each day it loaded to ``progress_path`` (:mod:`historical.progress`); its JVMs
    start with the options ``jvm`` (:func:`archive.spark_conf.jvm_options`)."""
    submit = Path(sys.executable).parent / "spark-submit"
    goal_args = ["--goals", f"@{goals_path}"] if goals_path else []
    # Settings holding secrets (the archive's keys) come in a 0600 file, never as arguments.
    properties = ["--properties-file", str(properties_file)] if properties_file else []
    funnels = ["--funnels", f"@{funnels_path}"] if funnels_path else []
    progress = ["--progress", str(progress_path)] if progress_path else []
    partitions = cfg.spark_shuffle_partitions
    shuffle = ["--conf", f"spark.sql.shuffle.partitions={partitions}"] if partitions else []
    jvm_args = [arg for key, value in jvm_conf(jvm).items() for arg in ("--conf", f"{key}={value}")]
    return [
        str(submit), "--master", master, *properties,
        "--conf", "spark.ui.enabled=false",
        *shuffle,
        *jvm_args,
        "--conf", f"spark.pyspark.python={sys.executable}",
        "--conf", f"spark.pyspark.driver.python={sys.executable}",
        "--driver-memory", cfg.spark_driver_memory,
        str(job_file()),
        "--from", first.isoformat(), "--to", last.isoformat(),
        "--sites", json.dumps(zones),
        "--archive-url", cfg.archive_url,
        "--mongo-db", cfg.mongo_db,
        *funnels,
        *goal_args,
        *progress,
    ]  # fmt: skip


def spark_submit_env(cfg: Config) -> dict[str, str]:
    """The environment ``spark-submit`` runs in: this process's, with the job's module path and
    MongoDB's URL (see :data:`MONGO_URL_VARIABLE`)."""
    return {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable, MONGO_URL_VARIABLE: cfg.mongo_url}


@dataclass(frozen=True)
class RollupPlan:
    """What one rollup covers: its local days, each site's time zone and the definitions it
    counts (those of the sites rolled up only)."""

    first: dt.date
    last: dt.date
    zones: dict[str, str]
    goals: dict[str, Sequence[GoalSpec]]
    funnels: dict[str, Sequence[FunnelSpec]]


def plan_rollup(
    first: dt.date,
    last: dt.date,
    site_ids: Sequence[str] | None = None,
    funnels: Mapping[str, Sequence[FunnelSpec]] | None = None,
    goals: Mapping[str, Sequence[GoalSpec]] | None = None,
) -> RollupPlan:
    """The rollup of ``[first, last]`` (local days) for the sites (all when None).

    ``goals`` and ``funnels``: each site's definitions, all of them (those of sites not rolled
    up are ignored); None reads them from the models (:meth:`footfall.models.Goal.specs_by_site`).
    Raises ValueError for an unknown site or a last day before the first."""
    if last < first:
        raise ValueError("the last day is before the first")
    zones = site_zones(site_ids)
    if goals is None:
        goals = Goal.specs_by_site(sorted(zones)) if zones else {}
    if funnels is None:
        funnels = Funnel.specs_by_site(sorted(zones)) if zones else {}
    return RollupPlan(
        first, last, zones,
        goals={site: specs for site, specs in goals.items() if site in zones},
        funnels={site: specs for site, specs in funnels.items() if site in zones},
    )  # fmt: skip


# Site-dates listed to size a job's input at most: each is a request to an object store, so a
# rollup of more is taken as large without listing them.
MAX_SIZED_FOLDERS = 64


def input_folders(first: dt.date, last: dt.date, zones: Mapping[str, str]) -> list[str]:
    """The archive folders the rollup of local days ``[first, last]`` reads: the sites' UTC
    dates of :func:`archive.schema.utc_dates_for`."""
    dates = utc_dates_for([first.isoformat(), last.isoformat()])
    return [date_folder(site, date) for site in sorted(zones) for date in dates]


def job_jvm_options(cfg: Config, first: dt.date, last: dt.date, zones: Mapping[str, str]) -> str:
    """The JVM options of the rollup's job (:func:`archive.spark_conf.jvm_options`) by the bytes
    of its input, those of a large one beyond :data:`MAX_SIZED_FOLDERS` site-dates."""
    folders = input_folders(first, last, zones)
    if len(folders) > MAX_SIZED_FOLDERS:
        return JVM_OPTIONS
    return jvm_options(Archive.from_config(cfg).size(folders, above=SMALL_INPUT_BYTES))


def announce_rollup(cfg: Config, days: Sequence[tuple[str, str]], zones: dict[str, str]) -> dict[str, dict]:
    """Send :data:`historical.signals.rollup_finished` for the ``(site, day)`` pairs loaded;
    return the drift its receivers report, by ``site|day``."""
    drift: dict[str, dict] = {}
    for _receiver, found in rollup_finished.send(sender=run_rollup, cfg=cfg, days=list(days), zones=zones):
        drift.update(found or {})
    return drift


def run_rollup(
    cfg: Config,
    first: dt.date,
    last: dt.date,
    site_ids: Sequence[str] | None = None,
    master: str | None = None,
    on_day: Callable[[str, str], None] = lambda site, day: None,
    funnels: Mapping[str, Sequence[FunnelSpec]] | None = None,
    goals: Mapping[str, Sequence[GoalSpec]] | None = None,
) -> RollupResult:
    """Roll up ``[first, last]`` (local days) for the sites with ``spark-submit``, then
    announce the days loaded (:func:`announce_rollup`).

    ``goals``, ``funnels``: as for :func:`plan_rollup`. Each rolled-up day gets a goal breakdown
    and a funnel document for every definition given, and loses those of definitions not given."""
    plan = plan_rollup(first, last, site_ids, funnels, goals)
    if not plan.zones:
        return RollupResult()
    with (
        spark_properties_file(archive_spark_conf(cfg)) as properties,
        definitions_file(plan.funnels) as funnels_path,
        definitions_file(plan.goals) as goals_path,
        tempfile.TemporaryDirectory(prefix="footfall-rollup-") as tmp,
    ):
        master = master or cfg.spark_master
        progress = Path(tmp) / "progress.jsonl"
        jvm = job_jvm_options(cfg, first, last, plan.zones)
        command = spark_submit_command(
            cfg, master, first, last, plan.zones, properties, funnels_path, goals_path, progress, jvm
        )
        result = _run_job(command, spark_submit_env(cfg), on_day, progress)
    result.drift = announce_rollup(cfg, result.days, plan.zones)
    return result


def _run_job(
    command: list[str], env: dict[str, str], on_day: Callable[[str, str], None], progress_path: Path
) -> RollupResult:
    """Run the job's ``command``, passing on each day it loaded (read from ``progress_path``); raise
    :class:`RollupFailed` if it fails."""
    result = RollupResult()
    progress = ProgressFile(progress_path, RollupFailed)
    # Spark's log (stderr) goes to a file, not a pipe: nothing has to drain it while the job runs.
    # Its stdout says again, for people, what the progress file holds.
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(  # noqa: S603 - argv built here, no shell
            command, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=REPO,
            start_new_session=True,  # a group of its own: _stop ends the JVM and its Python processes together
        )  # fmt: skip
        try:
            while True:
                ended = proc.poll() is not None  # before reading: the lines of an ended job are all there
                for site, day, events_read in progress.new_days():
                    result.days.append((site, day))
                    result.events += events_read
                    on_day(site, day)
                if ended:
                    break
                time.sleep(PROGRESS_POLL_S)
        except BaseException:
            # Interrupted (Ctrl-C, SIGTERM, a failing callback, a broken progress file): the job
            # must not outlive the archive lock its caller is about to release.
            _stop(proc)
            raise
        if proc.returncode != 0:
            log.seek(max(0, log.seek(0, os.SEEK_END) - 4000))
            tail = log.read().decode("utf-8", errors="replace")
            raise RollupFailed(f"spark job failed (exit {proc.returncode}):\n{tail}")
    return result


def _stop(proc: subprocess.Popen[bytes], grace_s: float = 20) -> None:
    """End the Spark job: its JVM, and the Python driver and workers it started, which would
    otherwise run on for a while after the JVM is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(grace_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def legacy_change_days(cfg: Config, site_ids: Sequence[str] | None = None) -> dict[str, list[str]]:
    """Per local day, the sites whose hour documents of that day still have the layout before
    buckets by instant on a day with a clock change in the site's zone: the days to re-roll
    (elsewhere an old hour document is exactly one bucket and is read as it is)."""
    zones = site_zones(site_ids)
    client, db = connect(cfg.mongo_url, cfg.mongo_db)
    try:
        legacy = legacy_hour_days(db)
    finally:
        client.close()
    out: dict[str, list[str]] = {}
    for site, days in legacy.items():
        if site not in zones:
            continue
        for day in days:
            if has_clock_change(day, zones[site]):
                out.setdefault(day, []).append(site)
    return {day: sorted(sites) for day, sites in sorted(out.items())}
