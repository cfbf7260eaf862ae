"""The local single-node service stack: Kafka (KRaft), Redis, a Mongo-wire server, Spark.

Each service knows how to install itself (downloads cached under ``FOOTFALL_CACHE_DIR``,
default ``~/.cache/footfall``), prepare its state under ``FOOTFALL_STATE_DIR`` (default
``~/.local/state/footfall``), start on its configured port, report health, and stop. The
processes themselves are declared in ``deploy/local/supervisord.conf`` and run by supervisord
(``deploy/local/supervisor.py``).

* Kafka: the broker jars of ``org.apache.kafka:kafka_2.13`` resolved from Maven Central
  with Maven, run on the machine's JDK as one combined broker+controller (KRaft), or with
  ``FOOTFALL_KAFKA_BROKERS=3`` as a cluster of three such nodes (replication factor 3,
  ``min.insync.replicas=2``; ``deploy/local/cluster.sh``).
* Redis: Debian's ``redis-server`` with its own port, data directory and an append-only
  file (the realtime layer's exactly-once bookkeeping must survive a restart).
* Redis shards: three more such servers (``redis-shard-1``..``-3``) on consecutive ports
  from ``FOOTFALL_REDIS_SHARDS_PORT``, for a speed layer sharded over several Redis
  (``FOOTFALL_REALTIME_REDIS_URLS``). Not part of the default stack: ``stack start redis-shards``.
* Mongo-wire server: mongo-java-server with its H2 backend (one file), resolved from Maven
  Central and run on the machine's JDK. Production runs MongoDB; Footfall talks to either
  only through pymongo.
* Spark: the pyspark wheel in local mode; "starting" it means proving a tiny job runs.
* MinIO: an S3-compatible object store for the archive on object storage, built with
  ``go install`` from the Go module proxy (a cold build takes ~2.5 min on 2 CPUs, then
  cached), plus Hadoop's S3A connector jars from Maven Central so Spark reads ``s3a://``.
  Not part of the default stack: ``stack start minio``.
* Chromium: Debian's package, for browser tests; "starting" it means it runs.
* deploy-tools: Debian's nginx unpacked into the cache (never run as a server), openssl and
  systemd-analyze, so the deployment test checks ``deploy/`` with ``nginx -t`` and
  ``systemd-analyze verify``.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from deploy.local.checks import StackError, ensure_port_free, wait_until
from deploy.local.supervisor import Supervisor
from footfall.config import LOCAL_PORTS, Config, load_config
from footfall_capture.kafka import client_config

KAFKA_VERSION = "4.3.1"
KAFKA_BROKER_COUNTS = (1, 3)  # FOOTFALL_KAFKA_BROKERS: one node, or a cluster of three
REDIS_SHARDS = 3  # `stack start redis-shards`: as many as supervisord.conf's redis-shard numprocs
MONGO_JAVA_SERVER_VERSION = "1.46.0"
# MinIO publishes RELEASE.* tags, not semantic versions, so the Go module proxy knows its
# commits by pseudo-version; this one is the server's commit of 2026-02-12.
MINIO_MODULE = "github.com/minio/minio"
MINIO_VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c"
HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def _int_env(env: Mapping[str, str], name: str, default: int, low: int = 1, high: int = 65535) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise StackError(f"{name}: expected an integer between {low} and {high} (got {raw!r})") from None
    if not low <= value <= high:
        raise StackError(f"{name}: expected an integer between {low} and {high} (got {raw!r})")
    return value


@dataclass(frozen=True)
class StackConfig:
    """Where the stack keeps downloads and state, and which ports it uses."""

    cache_dir: Path
    state_dir: Path
    kafka_port: int
    redis_port: int
    mongo_port: int
    web_port: int
    minio_port: int
    redis_shards_port: int  # the first of REDIS_SHARDS consecutive ports
    start_timeout: float
    kafka_brokers: int = 1

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> StackConfig:
        """Read ``FOOTFALL_*`` stack variables; raise :class:`StackError` naming a bad one."""
        home = Path.home()
        cfg = cls(
            cache_dir=Path(env.get("FOOTFALL_CACHE_DIR") or home / ".cache" / "footfall").expanduser(),
            state_dir=Path(env.get("FOOTFALL_STATE_DIR") or home / ".local" / "state" / "footfall").expanduser(),
            kafka_port=_int_env(env, "FOOTFALL_KAFKA_PORT", LOCAL_PORTS["kafka"], 1024, 65534),
            redis_port=_int_env(env, "FOOTFALL_REDIS_PORT", LOCAL_PORTS["redis"], 1024),
            mongo_port=_int_env(env, "FOOTFALL_MONGO_PORT", LOCAL_PORTS["mongo"], 1024, 65534),
            web_port=_int_env(env, "FOOTFALL_WEB_PORT", LOCAL_PORTS["web"], 1024),
            minio_port=_int_env(env, "FOOTFALL_MINIO_PORT", LOCAL_PORTS["minio"], 1024),
            redis_shards_port=_int_env(
                env, "FOOTFALL_REDIS_SHARDS_PORT", LOCAL_PORTS["redis_shards"], 1024, 65536 - REDIS_SHARDS
            ),
            start_timeout=float(_int_env(env, "FOOTFALL_START_TIMEOUT", 180, 5, 3600)),
            kafka_brokers=_int_env(env, "FOOTFALL_KAFKA_BROKERS", 1, 1, 3),
        )
        if cfg.kafka_brokers not in KAFKA_BROKER_COUNTS:
            # Two brokers cannot hold three replicas, and with min.insync.replicas=2 the loss
            # of either would stop every write: one node, or a cluster of three.
            raise StackError(f"FOOTFALL_KAFKA_BROKERS: expected 1 or 3 (got {cfg.kafka_brokers})")
        kafka = [port + offset for port in cfg.kafka_broker_ports for offset in (0, 1)]
        ports = [*kafka, cfg.redis_port, cfg.mongo_port, cfg.web_port, cfg.minio_port, *cfg.redis_shard_ports]
        if len(set(ports)) != len(ports):
            raise StackError(
                f"FOOTFALL_*_PORT: ports overlap ({ports}); each Kafka broker uses two ports, counting from "
                f"FOOTFALL_KAFKA_PORT, and the Redis shards {REDIS_SHARDS}, from FOOTFALL_REDIS_SHARDS_PORT"
            )
        return cfg

    @property
    def kafka_broker_ports(self) -> list[int]:
        """Each broker's client port (its controller listens on the next one)."""
        return [self.kafka_port + 2 * i for i in range(self.kafka_brokers)]

    @property
    def kafka_bootstrap(self) -> str:
        """Every broker, as ``KAFKA_BOOTSTRAP_SERVERS`` lists them."""
        return ",".join(f"127.0.0.1:{port}" for port in self.kafka_broker_ports)

    @property
    def redis_shard_ports(self) -> list[int]:
        """Each Redis shard's port (``redis-shard-1`` on the first)."""
        return [self.redis_shards_port + i for i in range(REDIS_SHARDS)]

    @property
    def redis_shard_urls(self) -> str:
        """The shards' URLs, comma-separated in shard order, as ``FOOTFALL_REALTIME_REDIS_URLS`` lists them."""
        return ",".join(f"redis://127.0.0.1:{port}/0" for port in self.redis_shard_ports)

    @property
    def log_dir(self) -> Path:
        return self.state_dir / "logs"

    def app_environment(self) -> dict[str, str]:
        """The variables that point Footfall's processes at this stack."""
        return {
            # Development mode (DEBUG, a dev SECRET_KEY, localhost names) is never a default:
            # the local stack asks for it, so a server configured by hand fails closed.
            "FOOTFALL_ENV": "local",
            "KAFKA_BOOTSTRAP_SERVERS": self.kafka_bootstrap,
            # Three nodes: every partition on all three, writes acknowledged by two (min.insync.replicas).
            **({"FOOTFALL_REPLICATION_FACTOR": "3"} if self.kafka_brokers == 3 else {}),
            "REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "MONGO_URL": f"mongodb://127.0.0.1:{self.mongo_port}/",
            "FOOTFALL_DATA_DIR": str(self.state_dir / "data"),
            "FOOTFALL_WEB_PORT": str(self.web_port),
            # Links in alert and report emails point at this stack's web server.
            "FOOTFALL_PUBLIC_URL": f"http://127.0.0.1:{self.web_port}",
            # Where `stack start spark-cluster` runs its master (for cluster tests and jobs).
            "FOOTFALL_SPARK_CLUSTER": f"spark://127.0.0.1:{SparkCluster(self).port}",
            # The S3 server of `stack start minio` and its bucket. The archive stays local
            # unless ARCHIVE_URL says otherwise (e.g. s3://footfall/archive).
            "FOOTFALL_S3_BUCKET": Minio.bucket,
            "ARCHIVE_S3_ENDPOINT": f"http://127.0.0.1:{self.minio_port}",
            "AWS_ACCESS_KEY_ID": Minio.access_key,
            "AWS_SECRET_ACCESS_KEY": Minio.secret_key,
            "FOOTFALL_SPARK_EXTRA_CLASSPATH": f"{Minio(self).hadoop_aws_libs}/*",
            # The Redis shards of `stack start redis-shards`. The speed layer stays on REDIS_URL
            # unless FOOTFALL_REALTIME_REDIS_URLS says otherwise (e.g. =$FOOTFALL_REDIS_SHARD_URLS).
            "FOOTFALL_REDIS_SHARD_URLS": self.redis_shard_urls,
        }

    def supervisor_environment(self) -> dict[str, str]:
        """What supervisord runs with: this process's environment, the app's variables, and
        the ports and paths ``deploy/local/supervisord.conf`` reads."""
        kafka, spark = Kafka(self), SparkCluster(self)
        return {
            **os.environ,
            **self.app_environment(),
            "FOOTFALL_STATE_DIR": str(self.state_dir),
            "FOOTFALL_REDIS_PORT": str(self.redis_port),
            "FOOTFALL_REDIS_SHARDS_PORT": str(self.redis_shards_port),
            "FOOTFALL_KAFKA_PORT": str(self.kafka_port),
            "FOOTFALL_MONGO_PORT": str(self.mongo_port),
            "FOOTFALL_SPARK_PORT": str(spark.port),
            "FOOTFALL_DEMO_RATE": os.environ.get("FOOTFALL_DEMO_RATE", "20"),
            "STACK_PYTHON": sys.executable,
            "STACK_KAFKA_HOME": str(kafka.home),
            "STACK_KAFKA_LIBS": str(kafka.libs),
            "STACK_KAFKA_CLUSTER_HOME": str(KafkaCluster(self).home),
            "STACK_MONGO_CLASSPATH": Mongo(self).classpath,
            "STACK_SPARK_CLASS": spark.spark_class,
            "STACK_SPARK_UI_PORT": str(spark.port + 1),
            "FOOTFALL_MINIO_PORT": str(self.minio_port),
            "STACK_MINIO": str(Minio(self).binary),
        }

    def supervisor(self) -> Supervisor:
        """The supervisord that runs this stack's processes."""
        return Supervisor(self.state_dir, self.supervisor_environment())


def _apt_install(*packages: str) -> None:
    """Install Debian packages (root only); a clear error otherwise."""
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise StackError(f"missing {', '.join(packages)}: install them with your package manager")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print(f"installing Debian packages: {' '.join(packages)}", flush=True)
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages], check=True, env=env)


def _need(command: str, *packages: str) -> str:
    path = shutil.which(command)
    if path is None:
        _apt_install(*packages)
        path = shutil.which(command)
    if path is None:
        raise StackError(f"{command} not found after installing {', '.join(packages)}")
    return path


def new_cluster_id() -> str:
    """A fresh KRaft cluster id: 16 random bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _maven_libs(cfg: StackConfig, what: str, pom: Path, version_property: str, version: str, libs: Path) -> None:
    """Copy the runtime dependencies of ``pom`` (at ``version``) from Maven Central into ``libs``,
    once: a ``.complete`` marker in ``libs`` says a previous copy finished."""
    marker = libs / ".complete"
    if marker.exists():
        return
    mvn = _need("mvn", "maven")
    print(f"resolving {what} {version} from Maven Central (once; cached in {libs})", flush=True)
    shutil.rmtree(libs, ignore_errors=True)
    subprocess.run(
        [
            mvn, "-B", "-q", "-f", str(pom),
            f"-Dmaven.repo.local={cfg.cache_dir / 'm2'}",
            f"-D{version_property}={version}",
            "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={libs}",
        ],
        check=True,
    )  # fmt: skip
    marker.write_text(version + "\n")


class Service(ABC):
    """One service of the stack; subclasses fill in install/healthy and name their process."""

    name: str = ""
    port_variable: str = ""
    # The service's process in deploy/local/supervisord.conf; None for a service that is only a check.
    program: str | None = None

    def __init__(self, cfg: StackConfig) -> None:
        self.cfg = cfg

    @functools.cached_property
    def supervisor(self) -> Supervisor:
        return self.cfg.supervisor()

    def install(self) -> None:  # noqa: B027 - optional hook
        """Make the service's binaries available (cached); idempotent."""

    def ports(self) -> list[int]:
        return []

    def pid(self) -> int | None:
        """The pid of the service's process while it runs."""
        return self.supervisor.pid(self.program) if self.program else None

    @abstractmethod
    def healthy(self) -> bool:
        """True when the service answers its own protocol on its port."""

    def after_start(self) -> None:  # noqa: B027 - optional hook
        """One-off set-up once healthy (topics, indexes)."""

    def programs(self) -> list[str]:
        """The service's processes, in the order they stop (a service may run several)."""
        return [self.program] if self.program else []

    def start(self) -> str:
        """Start the service if needed and wait until healthy; return a one-line status."""
        self.install()
        if self.program is None:
            self.after_start()
            return "ok"
        pid = self.pid()
        if pid is not None and self.healthy():
            self.after_start()
            return f"already running (pid {pid})"
        if pid is None:  # a process of ours still starting up is waited for, not started twice
            for port in self.ports():
                ensure_port_free(port, self.name, self.port_variable)
            self.prepare()
            pid = self.supervisor.start(self.program)
            state = f"started (pid {pid})"
        else:
            state = f"started earlier (pid {pid})"
        wait_until(
            self.healthy,
            self.cfg.start_timeout,
            f"{self.name} on port {self.ports()[0]}",
            alive=lambda: self.pid() is not None,
            log_file=self.supervisor.log_file(self.program),
        )
        self.after_start()
        return state

    def stop(self) -> list[tuple[str, bool]]:
        """Stop the service's processes; each one's name and whether it was running."""
        return [(name, self.supervisor.stop(name)) for name in self.programs()]

    def kill(self) -> bool:
        """SIGKILL the service's process at once (fault injection); True if it was running."""
        return self.supervisor.kill(self.program) if self.program else False

    def prepare(self) -> None:  # noqa: B027 - optional hook
        """Create state directories and config files before the first start."""


class Redis(Service):
    name = program = "redis"
    port_variable = "FOOTFALL_REDIS_PORT"

    def install(self) -> None:
        _need("redis-server", "redis-server")

    def ports(self) -> list[int]:
        return [self.cfg.redis_port]

    def prepare(self) -> None:
        (self.cfg.state_dir / "redis").mkdir(parents=True, exist_ok=True)

    def healthy(self) -> bool:
        return _redis_answers(self.cfg.redis_port)


def _redis_answers(port: int) -> bool:
    import redis

    try:
        return bool(redis.Redis(port=port, socket_timeout=1).ping())
    except redis.RedisError:
        return False


class RedisShards(Service):
    """Three Redis servers for a sharded speed layer (``FOOTFALL_REALTIME_REDIS_URLS``), each
    like the stack's ``redis`` (an append-only file fsync'd every second, no snapshots) with
    its own data directory, as processes ``redis-shard-1``..``-3`` on consecutive ports from
    ``FOOTFALL_REDIS_SHARDS_PORT``. ``stack kill redis-shard-2`` SIGKILLs one; ``stack start
    redis-shards`` starts the ones that are down, each from its append-only file."""

    name = "redis-shards"
    program = "redis-shard-1"  # the first shard stands for the service; programs() lists all
    port_variable = "FOOTFALL_REDIS_SHARDS_PORT"

    @property
    def shards(self) -> list[tuple[str, int, Path]]:
        """Each shard's supervisord program, port and data directory (as supervisord.conf's numprocs)."""
        return [
            (f"redis-shard-{i}", port, self.cfg.state_dir / f"redis-shard-{i}")
            for i, port in enumerate(self.cfg.redis_shard_ports, start=1)
        ]

    def install(self) -> None:
        Redis(self.cfg).install()

    def ports(self) -> list[int]:
        return self.cfg.redis_shard_ports

    def programs(self) -> list[str]:
        return [program for program, _, _ in reversed(self.shards)]

    def pid(self) -> int | None:
        """The pid of the first shard that runs."""
        return next((pid for p, _, _ in self.shards if (pid := self.supervisor.pid(p)) is not None), None)

    def prepare(self) -> None:
        """Each shard's data directory, and its ``shard.conf`` naming its port (the rest of its
        settings are on its command line in supervisord.conf, as the stack's ``redis`` has them)."""
        for _, port, data in self.shards:
            data.mkdir(parents=True, exist_ok=True)
            (data / "shard.conf").write_text(f"port {port}\n")

    def healthy(self) -> bool:
        return all(_redis_answers(port) for _, port, _ in self.shards)

    def start(self) -> str:
        """Start the shards that are not running and wait until all three answer."""
        self.install()
        down = [(program, port) for program, port, _ in self.shards if self.supervisor.pid(program) is None]
        for _, port in down:
            ensure_port_free(port, self.name, self.port_variable)
        self.prepare()
        started = [f"{program} (pid {self.supervisor.start(program)})" for program, _ in down]
        wait_until(
            self.healthy,
            self.cfg.start_timeout,
            f"redis shards on ports {', '.join(map(str, self.ports()))}",
            alive=lambda: all(self.supervisor.pid(p) is not None for p, _, _ in self.shards),
            log_file=self.supervisor.log_file(down[0][0] if down else self.program),
        )
        return f"started {', '.join(started)}" if started else f"already running ({len(self.shards)} shards)"

    def kill(self) -> bool:
        """SIGKILL every shard (one shard: ``stack kill redis-shard-N``)."""
        return any([self.supervisor.kill(program) for program in self.programs()])


class Mongo(Service):
    """mongo-java-server (H2 backend) speaking the MongoDB wire protocol.

    Chosen over FerretDB 1.x on SQLite (the stack's server until 2026-11-24): FerretDB 1.24
    answers every query by decoding each document of the collection in Go (its SQLite
    backend pushes down only a lone ``_id`` equality, and even that misses the ``_id``
    index), so a breakdown over a week read 3 s on 31,600 rollup documents. mongo-java-server
    also scans (it uses only unique indexes), but over documents it keeps decoded: the same
    read takes 30-100 ms. Both are stand-ins; production runs MongoDB, whose indexes
    ``historical.store.ensure_indexes`` creates.
    """

    name = program = "mongo"
    port_variable = "FOOTFALL_MONGO_PORT"

    @property
    def libs(self) -> Path:
        return self.cfg.cache_dir / f"mongo-java-server-{MONGO_JAVA_SERVER_VERSION}" / "libs"

    @property
    def classes(self) -> Path:
        return self.libs.parent / "classes"

    @property
    def classpath(self) -> str:
        return f"{self.libs}/*:{self.classes}"

    @property
    def store(self) -> Path:
        return self.cfg.state_dir / "mongo" / "footfall.mv.db"

    def install(self) -> None:
        _need("java", "openjdk-17-jre-headless")
        marker = self.classes / ".complete"
        source = HERE / "mongo" / "MongoWire.java"
        # The launcher is recompiled when its source changes (the marker holds its text).
        if marker.exists() and marker.read_text() == source.read_text():
            return
        _maven_libs(
            self.cfg, "mongo-java-server", HERE / "mongo" / "pom.xml",
            "mongo.java.server.version", MONGO_JAVA_SERVER_VERSION, self.libs,
        )  # fmt: skip
        javac = _need("javac", "openjdk-17-jdk-headless")
        shutil.rmtree(self.classes, ignore_errors=True)
        self.classes.mkdir(parents=True)
        subprocess.run([javac, "-cp", f"{self.libs}/*", "-d", str(self.classes), str(source)], check=True)
        marker.write_text(source.read_text())

    def ports(self) -> list[int]:
        return [self.cfg.mongo_port]

    def prepare(self) -> None:
        self.store.parent.mkdir(parents=True, exist_ok=True)

    def healthy(self) -> bool:
        import pymongo
        import pymongo.errors

        client = pymongo.MongoClient(port=self.cfg.mongo_port, serverSelectionTimeoutMS=1000)
        try:
            return client.admin.command("ping").get("ok") == 1
        except pymongo.errors.PyMongoError:
            return False
        finally:
            client.close()


class Kafka(Service):
    """Apache Kafka, one node in KRaft combined mode (broker + controller)."""

    name = program = "kafka"
    port_variable = "FOOTFALL_KAFKA_PORT"

    @property
    def libs(self) -> Path:
        return self.cfg.cache_dir / f"kafka-{KAFKA_VERSION}" / "libs"

    @property
    def home(self) -> Path:
        # Named by port: KRaft records the controller's address when the log is formatted.
        return self.cfg.state_dir / f"kafka-{self.cfg.kafka_port}"

    def install(self) -> None:
        _need("java", "openjdk-17-jre-headless")
        _maven_libs(self.cfg, "Apache Kafka", HERE / "kafka" / "pom.xml", "kafka.version", KAFKA_VERSION, self.libs)

    def ports(self) -> list[int]:
        return [self.cfg.kafka_port, self.cfg.kafka_port + 1]

    def _java(self, main: str, *args: str) -> list[str]:
        """A JVM running one of Kafka's tools (the broker itself runs under supervisord)."""
        return [
            shutil.which("java") or "java",
            "-Xmx256m",
            "-XX:+UseG1GC",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
            "-cp", f"{self.libs}/*",
            main, *args,
        ]  # fmt: skip

    def prepare(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        port, cport = self.cfg.kafka_port, self.cfg.kafka_port + 1
        data = self.home / "data"
        (self.home / "server.properties").write_text(
            (HERE / "kafka" / "server.properties.in").read_text().format(port=port, cport=cport, data=data)
        )
        (self.home / "log4j2.properties").write_text((HERE / "kafka" / "log4j2.properties").read_text())
        if (data / "meta.properties").exists():
            return
        # A new id may start with "-", hence --cluster-id=… in one argument.
        subprocess.run(
            self._java("kafka.tools.StorageTool", "format", "--standalone", f"--cluster-id={new_cluster_id()}",
                       "-c", str(self.home / "server.properties")),
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip

    @functools.cached_property
    def app(self) -> Config:
        """Footfall's configuration against this stack (its brokers, topics and Kafka security),
        read once: the health checks poll through it."""
        return load_config({**os.environ, **self.cfg.app_environment()}, REPO)

    def _admin(self):  # noqa: ANN202 - confluent_kafka is imported lazily
        from confluent_kafka.admin import AdminClient

        return AdminClient(client_config(self.app.kafka, log_level=0))

    def healthy(self) -> bool:
        from confluent_kafka import KafkaException

        try:
            metadata = self._admin().list_topics(timeout=2)
        except KafkaException:
            return False
        return len(metadata.brokers) >= self.cfg.kafka_brokers

    def _topics(self) -> tuple[str, str]:
        return self.app.events_topic, self.app.invalid_topic

    def topic_sizes(self) -> dict[str, int]:
        """Messages retained per project topic (sum of high minus low watermarks)."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(client_config(self.app.kafka, **{"group.id": "footfall-status"}))
        try:
            sizes = {}
            for topic in self._topics():
                meta = consumer.list_topics(topic, timeout=5).topics[topic]
                marks = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5) for p in meta.partitions]
                sizes[topic] = sum(high - low for low, high in marks)
            return sizes
        finally:
            consumer.close()

    def after_start(self) -> None:
        """Create the project's topics if missing (idempotent), as ``manage.py kafka_topics`` does."""
        from footfall.kafka_topics import TopicError, ensure_topics, wanted_topics

        try:
            report = ensure_topics(self._admin(), wanted_topics(self.app))
        except TopicError as exc:
            raise StackError(f"kafka: {exc}") from exc
        for difference in report.differences:
            print(f"kafka: {difference}", file=sys.stderr)


class KafkaCluster(Kafka):
    """Three Apache Kafka nodes, each a broker and a KRaft controller (combined mode), as
    separate processes (``kafka-broker-1``..``-3``) on consecutive port pairs from
    ``FOOTFALL_KAFKA_PORT``. The project's topics get three replicas and
    ``min.insync.replicas=2``: with producers' ``acks=all`` a write is acknowledged once two
    nodes hold it, so losing any one node loses nothing acknowledged and writes go on.

    Three combined nodes rather than three brokers and separate controllers: a three-voter
    quorum survives the loss of any one node either way, and on a small machine three JVMs
    start and run in half the memory and CPU of six. Production separates them (controllers
    on their own machines), so a busy broker never delays the quorum."""

    program = "kafka-broker-1"  # the first node stands for the service; programs() lists all

    @property
    def nodes(self) -> list[tuple[int, int, str]]:
        """Each node's id, client port and supervisord program (as supervisord.conf's numprocs)."""
        return [(i, port, f"kafka-broker-{i}") for i, port in enumerate(self.cfg.kafka_broker_ports, start=1)]

    @property
    def home(self) -> Path:
        return self.cfg.state_dir / f"kafka-cluster-{self.cfg.kafka_port}"

    def ports(self) -> list[int]:
        return [port + offset for _, port, _ in self.nodes for offset in (0, 1)]

    def programs(self) -> list[str]:
        return [program for _, _, program in reversed(self.nodes)]

    def pid(self) -> int | None:
        """The pid of the first node that runs."""
        return next((pid for _, _, p in self.nodes if (pid := self.supervisor.pid(p)) is not None), None)

    def _cluster_id(self) -> str:
        """The cluster's id: every node's log is formatted with the same one, kept beside them."""
        path = self.home / "cluster-id"
        if not path.exists():
            path.write_text(new_cluster_id() + "\n")
        return path.read_text().strip()

    def prepare(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "log4j2.properties").write_text((HERE / "kafka" / "log4j2.properties").read_text())
        voters = ",".join(f"{i}@127.0.0.1:{port + 1}" for i, port, _ in self.nodes)
        template = (HERE / "kafka" / "cluster-server.properties.in").read_text()
        for i, port, _ in self.nodes:
            node = self.home / f"node-{i}"
            node.mkdir(exist_ok=True)
            data = node / "data"
            properties = node / "server.properties"
            properties.write_text(template.format(node=i, voters=voters, port=port, cport=port + 1, data=data))
            if not (data / "meta.properties").exists():
                tool = self._java("kafka.tools.StorageTool", "format", f"--cluster-id={self._cluster_id()}")
                subprocess.run([*tool, "-c", str(properties)], check=True, stdout=subprocess.DEVNULL)

    def start(self) -> str:
        """Start the nodes that are not running, wait until all three serve and every
        partition has all its replicas in sync again (so the cluster survives the next
        failure), then create the topics."""
        self.install()
        down = [(i, port, program) for i, port, program in self.nodes if self.supervisor.pid(program) is None]
        for _, port, _ in down:
            ensure_port_free(port, self.name, self.port_variable)
            ensure_port_free(port + 1, self.name, self.port_variable)
        if down:
            self.prepare()
        started = [f"{program} (pid {self.supervisor.start(program)})" for _, _, program in down]
        wait_until(
            self.healthy,
            self.cfg.start_timeout,
            f"kafka cluster on ports {self.cfg.kafka_bootstrap}",
            alive=lambda: all(self.supervisor.pid(p) is not None for _, _, p in self.nodes),
            log_file=self.supervisor.log_file(down[0][2] if down else self.program),
        )
        self.after_start()
        wait_until(lambda: not self.under_replicated(), self.cfg.start_timeout, "kafka cluster replicas in sync")
        return f"started {', '.join(started)}" if started else f"already running ({len(self.nodes)} nodes)"

    def stop(self) -> list[tuple[str, bool]]:
        """Stop the nodes together: one stopped last, alone, would wait for a quorum to hand
        its partitions to until supervisord's SIGKILL."""
        return self.supervisor.stop_together(self.programs())

    def kill(self) -> bool:
        """SIGKILL every node (one node: ``stack kill kafka-broker-N``)."""
        return any([self.supervisor.kill(program) for program in self.programs()])

    def under_replicated(self) -> list[str]:
        """``topic/partition`` of every partition with a replica out of sync (or unreachable)."""
        from confluent_kafka import KafkaException

        try:
            topics = self._admin().list_topics(timeout=5).topics
        except KafkaException as exc:
            return [f"(no metadata: {exc})"]
        return [
            f"{name}/{p.id}"
            for name, topic in topics.items()
            for p in topic.partitions.values()
            if p.error is not None or p.leader < 0 or set(p.isrs) != set(p.replicas)
        ]


class Spark(Service):
    """Spark in local mode from the pyspark wheel; healthy when a tiny job gives the right sum."""

    name = "spark"

    def install(self) -> None:
        _need("java", "openjdk-17-jre-headless")
        try:
            import pyspark  # noqa: F401
        except ImportError as exc:
            raise StackError("spark: pyspark is not installed; run deploy/local/bootstrap.sh") from exc

    def after_start(self) -> None:
        code = (
            "from pyspark.sql import SparkSession\n"
            "s = SparkSession.builder.master('local[1]').appName('footfall-check')"
            ".config('spark.ui.enabled', 'false').getOrCreate()\n"
            "s.sparkContext.setLogLevel('ERROR')\n"
            "print(s.range(1000).selectExpr('sum(id) AS n').collect()[0]['n'])\n"
            "s.stop()\n"
        )
        try:
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, timeout=self.cfg.start_timeout
            )
        except subprocess.TimeoutExpired as exc:
            raise StackError(f"spark: the check job did not finish in {self.cfg.start_timeout:.0f}s") from exc
        if out.returncode != 0 or out.stdout.strip().splitlines()[-1:] != ["499500"]:
            raise StackError(f"spark: the check job failed:\n{out.stderr[-2000:]}")

    def healthy(self) -> bool:
        return True


class SparkCluster(Service):
    """A local Spark standalone cluster: one master and two workers (1 core, 1 GiB each),
    started from the pyspark install, so jobs are tested with ``--master spark://…`` as on
    a real cluster. Not part of the default stack; ``stack start spark-cluster``."""

    name = "spark-cluster"
    program = "spark-master"
    port_variable = "FOOTFALL_SPARK_PORT"
    workers = ["spark-worker-1", "spark-worker-2"]  # as many as supervisord.conf's numprocs

    @property
    def port(self) -> int:
        return _int_env(os.environ, self.port_variable, self.cfg.kafka_port + 30, 1024, 65534)

    def install(self) -> None:
        Spark(self.cfg).install()

    def ports(self) -> list[int]:
        return [self.port, self.port + 1]

    @property
    def spark_class(self) -> str:
        """The pyspark install's launcher of Spark's JVM classes (found without importing pyspark)."""
        spec = importlib.util.find_spec("pyspark")
        if spec is None or spec.origin is None:
            return "spark-class"  # not installed: install() says so first
        return str(Path(spec.origin).parent / "bin" / "spark-class")

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _alive_workers(self) -> int:
        import urllib.request

        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port + 1}/json/", timeout=2) as resp:
                status = json.load(resp)
        except (OSError, ValueError):
            return -1
        return sum(1 for w in status.get("workers", []) if w.get("state") == "ALIVE")

    def healthy(self) -> bool:
        return self._alive_workers() >= 0

    def after_start(self) -> None:
        for worker in self.workers:
            if self.supervisor.pid(worker) is None:
                self.supervisor.start(worker)
        wait_until(lambda: self._alive_workers() >= len(self.workers), self.cfg.start_timeout, "spark-cluster workers")

    def programs(self) -> list[str]:
        return [*reversed(self.workers), "spark-master"]


class Minio(Service):
    """MinIO, an S3-compatible object store, serving one bucket for the archive.

    Built from source with ``go install`` (Go from the machine, or Debian's ``golang-go``;
    ``GOTOOLCHAIN=auto`` lets an older Go fetch the toolchain MinIO needs from the module
    proxy), into the cache directory with its module and build caches. A cold build takes
    ~2.5 min on 2 CPUs, within what CI allows, so no other server is needed. Its keys are
    fixed development values, like the development SECRET_KEY: the server listens on
    127.0.0.1 only. Installing it also resolves Hadoop's S3A connector for Spark.
    """

    name = program = "minio"
    port_variable = "FOOTFALL_MINIO_PORT"
    bucket = "footfall"
    access_key = "footfall-local"
    secret_key = "footfall-local-development-secret"  # noqa: S105 - a local development value

    @property
    def binary(self) -> Path:
        return self.cfg.cache_dir / f"minio-{MINIO_VERSION}" / "minio"

    @property
    def hadoop_aws_libs(self) -> Path:
        return self.cfg.cache_dir / f"hadoop-aws-{pyspark_hadoop_version()}" / "libs"

    def install(self) -> None:
        if not self.binary.exists():
            self._build()
        Spark(self.cfg).install()
        _maven_libs(
            self.cfg, "Hadoop's S3A connector (hadoop-aws)", HERE / "hadoop_aws" / "pom.xml",
            "hadoop.version", pyspark_hadoop_version(), self.hadoop_aws_libs,
        )  # fmt: skip

    def _build(self) -> None:
        go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
        go = go or _need("go", "golang-go")
        gocache = self.cfg.cache_dir / "go"
        built = self.binary.parent / "build"
        env = {
            **os.environ,
            "GOBIN": str(built),
            "GOMODCACHE": str(gocache / "mod"),
            "GOCACHE": str(gocache / "build"),
            "GOFLAGS": "-modcacherw",  # so the caches can be removed below
            "GOTOOLCHAIN": "auto",
            "CGO_ENABLED": "0",
        }
        print(f"building MinIO {MINIO_VERSION} with go install (once, ~2.5 min; cached in {self.binary.parent})",
              flush=True)  # fmt: skip
        out = subprocess.run([go, "install", f"{MINIO_MODULE}@{MINIO_VERSION}"], env=env, check=False)
        if out.returncode != 0:
            raise StackError(f"minio: `go install {MINIO_MODULE}@{MINIO_VERSION}` failed (a Go >= 1.21 is needed)")
        # Moved into place whole, so an interrupted build is never taken for a finished one.
        (built / "minio").rename(self.binary)
        built.rmdir()
        # Go's module and build caches serve only a rebuild: ~2 GB freed.
        shutil.rmtree(gocache, ignore_errors=True)

    def ports(self) -> list[int]:
        return [self.cfg.minio_port]

    def prepare(self) -> None:
        (self.cfg.state_dir / "minio").mkdir(parents=True, exist_ok=True)

    def healthy(self) -> bool:
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.cfg.minio_port}/minio/health/live", timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def after_start(self) -> None:
        """Create the bucket if missing."""
        import pyarrow.fs as pafs

        fs = pafs.S3FileSystem(
            access_key=self.access_key, secret_key=self.secret_key, region="us-east-1",
            endpoint_override=f"127.0.0.1:{self.cfg.minio_port}", scheme="http", allow_bucket_creation=True,
        )  # fmt: skip
        if fs.get_file_info(self.bucket).type == pafs.FileType.NotFound:
            fs.create_dir(self.bucket)


def pyspark_hadoop_version() -> str:
    """The Hadoop version inside the installed pyspark (hadoop-aws must match it exactly)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise StackError("spark: pyspark is not installed; run deploy/local/bootstrap.sh")
    jars = sorted((Path(spec.origin).parent / "jars").glob("hadoop-client-api-*.jar"))
    if not jars:
        raise StackError("spark: no hadoop-client-api jar in the pyspark install")
    return jars[-1].name.removeprefix("hadoop-client-api-").removesuffix(".jar")


class Chromium(Service):
    """Debian's headless Chromium for the browser tests (the tracker, the dashboard).

    Test tools must not download a browser of their own (this machine reaches package
    registries only), so Playwright drives this one through ``executable_path``.
    """

    name = "chromium"

    def install(self) -> None:
        _need("chromium", "chromium", "chromium-driver")

    def after_start(self) -> None:
        out = subprocess.run(["chromium", "--version"], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise StackError(f"chromium: `chromium --version` failed: {out.stderr.strip()[-500:]}")

    def healthy(self) -> bool:
        return True


class DeployTools(Service):
    """What the deployment test (tests/unit/test_deploy_material.py) runs on the material in
    ``deploy/``: Debian's nginx binary for ``nginx -t``, ``openssl`` for its test certificate,
    and ``systemd-analyze verify`` for the units.

    nginx is downloaded and unpacked into the cache, not installed: installing it would start
    a web server on port 80 of a shared machine. An nginx already on the PATH is used as is.
    """

    name = "deploy-tools"

    @property
    def binary(self) -> Path:
        """The nginx binary."""
        found = shutil.which("nginx")
        return Path(found) if found else self.cfg.cache_dir / "nginx" / "usr" / "sbin" / "nginx"

    def install(self) -> None:
        _need("openssl", "openssl")
        _need("systemd-analyze", "systemd")
        if self.binary.exists():
            return
        if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
            raise StackError("nginx: not found and no apt-get to fetch it; install nginx with your package manager")
        download = self.cfg.cache_dir / "nginx-download"
        shutil.rmtree(download, ignore_errors=True)
        download.mkdir(parents=True)
        fetch = ["apt-get", "download", "-qq", "nginx"]
        if subprocess.run(fetch, cwd=download, capture_output=True).returncode != 0:
            if os.geteuid() != 0:
                raise StackError("nginx: `apt-get download nginx` failed; run `apt-get update` or install nginx")
            subprocess.run(["apt-get", "update", "-qq"], check=True)  # a fresh machine has no package lists
            subprocess.run(fetch, cwd=download, check=True, capture_output=True)
        [package] = download.glob("nginx_*.deb")
        unpacked = download / "root"
        subprocess.run(["dpkg-deb", "-x", str(package), str(unpacked)], check=True)
        shutil.rmtree(self.cfg.cache_dir / "nginx", ignore_errors=True)
        unpacked.rename(self.cfg.cache_dir / "nginx")
        shutil.rmtree(download)

    def after_start(self) -> None:
        out = subprocess.run([str(self.binary), "-v"], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise StackError(f"nginx: `nginx -v` failed: {out.stderr.strip()[-500:]}")

    def healthy(self) -> bool:
        return True


SERVICES: dict[str, type[Service]] = {
    "redis": Redis,
    "redis-shards": RedisShards,
    "mongo": Mongo,
    "kafka": Kafka,
    "spark": Spark,
    "chromium": Chromium,
    "spark-cluster": SparkCluster,
    "deploy-tools": DeployTools,
    "minio": Minio,
}


def make_service(name: str, cfg: StackConfig) -> Service:
    """The service called ``name`` in this stack: ``kafka`` is the three-node cluster when
    ``FOOTFALL_KAFKA_BROKERS=3``."""
    if name == "kafka" and cfg.kafka_brokers > 1:
        return KafkaCluster(cfg)
    return SERVICES[name](cfg)
