"""The production material under deploy/ (systemd, container, compose, proxy) checked as far as
this machine allows: no container engine and no systemd as PID 1 here, so nothing is run, but
every file parses, every process it names exists, every setting it sets is one the app reads,
images are pinned and no secret is committed."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from collector.views import MAX_BATCH_BYTES
from deploy.local.services import KAFKA_VERSION
from footfall.config import REQUIRED_HINTS
from footfall_capture import kafka_security
from footfall_capture.settings import NAMES as CAPTURE_NAMES
from tests.proxy import nginx_binary, proxy_config

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
UNITS = DEPLOY / "systemd"
CONTAINERFILE = DEPLOY / "container" / "Containerfile"
COMPOSE = DEPLOY / "compose" / "compose.yaml"
NGINX = DEPLOY / "proxy" / "nginx"
ENV_EXAMPLES = [UNITS / "footfall.env.example", DEPLOY / "compose" / "env.example"]
# Where the units and the image install the server; the test's own environment stands in for it.
INSTALL_PREFIX = "/opt/footfall/venv"
VENV_BIN = Path(sys.executable).parent

# Variables read by the tools Footfall runs on, not by Footfall itself.
TOOL_SETTINGS = {
    "DJANGO_SETTINGS_MODULE": "Django: which settings module to load",
    "PYTHONUNBUFFERED": "Python: logs reach the journal or container log at once",
    "PATH": "the shell: the virtualenv's commands",
    "SPARK_WORKER_DIR": "Spark: a standalone worker's scratch directory",
    "SPARK_LOCAL_DIRS": "Spark: shuffle and spill files",
}
# The env files' and compose's own interpolation values that are secrets.
SECRET_NAME = re.compile(r"SECRET|PASSWORD|PRIVATE")
PLACEHOLDER = re.compile(r"^(CHANGE-ME|\$\{[A-Z0-9_]+:\?[^}]*\})$")
_READ_PATTERNS = (
    re.compile(r"""\b(?:env|environ)\.get\(\s*["']([A-Z][A-Z0-9_]+)["']"""),
    re.compile(r"""\b(?:env|environ)\[\s*["']([A-Z][A-Z0-9_]+)["']\s*\]"""),
    re.compile(r"""\(\s*env\s*,\s*["']([A-Z][A-Z0-9_]+)["']"""),
)
# The server's packages (pyproject.toml's [tool.setuptools.packages.find]).
SERVER_PACKAGES = ("footfall", "footfall_server", "collector", "realtime", "historical", "archive", "spark_jobs",
                   "query", "api", "dashboard")  # fmt: skip


def app_settings() -> set[str]:
    """Every environment variable Footfall's code reads: config.py's, the capture library's and
    any other direct read in the server's packages."""
    names = set(REQUIRED_HINTS) | set(CAPTURE_NAMES) | {f"KAFKA_{name}" for name in kafka_security.SETTINGS}
    sources = [REPO / "host" / "footfall_capture" / "settings.py"]
    sources += [path for package in SERVER_PACKAGES for path in (REPO / package).rglob("*.py")]
    for path in sources:
        text = path.read_text()
        for pattern in _READ_PATTERNS:
            names.update(pattern.findall(text))
    return names


def read_env_file(path: Path) -> dict[str, str]:
    """``NAME=value`` lines of an environment file; commented-out lines count too (they are examples)."""
    out = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^#?([A-Z][A-Z0-9_]*)=(.*)$", line.strip())
        if match:
            out[match.group(1)] = match.group(2)
    return out


def unit_files() -> list[Path]:
    return sorted(p for p in UNITS.iterdir() if p.suffix in {".service", ".target"})


def unit_values(path: Path, key: str) -> list[str]:
    """Every value of ``key=`` in a unit file (keys may repeat, which configparser refuses)."""
    return [line.split("=", 1)[1] for line in path.read_text().splitlines() if line.startswith(f"{key}=")]


def unit_environment(path: Path) -> dict[str, str]:
    out = {}
    for value in unit_values(path, "Environment"):
        for item in shlex.split(value):
            name, _, setting = item.partition("=")
            out[name] = setting
    return out


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def footfall_services() -> dict[str, dict]:
    """Compose services that run Footfall's image (the Spark side included)."""
    return {name: s for name, s in compose()["services"].items() if s.get("image", "").startswith("footfall")}


def containerfile_instructions() -> list[tuple[str, str]]:
    """(instruction, arguments) of the Containerfile, continuation lines joined, comments dropped."""
    lines = [line for line in CONTAINERFILE.read_text().splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    return [(m.group(1).upper(), m.group(2)) for m in re.finditer(r"^([A-Za-z]+)\s+(.*)$", joined, re.M)]


def processes() -> Iterator[tuple[str, list[str]]]:
    """(where, argv) of every process the material runs with Footfall's code."""
    for path in unit_files():
        for command in unit_values(path, "ExecStart"):
            yield path.name, shlex.split(command)
    for name, service in footfall_services().items():
        yield f"compose {name}", service["command"]
    for instruction, args in containerfile_instructions():
        if instruction == "CMD":
            yield "Containerfile CMD", yaml.safe_load(args)


# ---- syntax --------------------------------------------------------------------------------


def test_systemd_units_verify(tmp_path: Path) -> None:
    """systemd-analyze verify accepts every unit, with the install prefix mapped to this virtualenv."""
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is missing: python -m deploy.local.stack start deploy-tools (test.sh does)"
    env_file = tmp_path / "footfall.env"
    env_file.write_text("")
    for path in unit_files():
        text = path.read_text().replace(INSTALL_PREFIX, sys.prefix).replace("/etc/footfall/footfall.env", str(env_file))
        (tmp_path / path.name).write_text(text)
    units = [str(tmp_path / p.name) for p in unit_files()]
    proc = subprocess.run([analyze, "verify", *units], capture_output=True, text=True, timeout=120)
    # Dependencies on units this machine lacks are not the units' fault; anything else is.
    problems = [line for line in (proc.stdout + proc.stderr).splitlines() if line and "not found" not in line]
    assert proc.returncode == 0, proc.stderr
    assert problems == []


def test_systemd_units_are_hardened_and_restart() -> None:
    """Each long-running unit runs as the footfall user, hardened, restarted on failure, with the env file."""
    for path in unit_files():
        if path.suffix != ".service":
            continue
        keys = ("User", "ProtectSystem", "NoNewPrivileges", "Restart", "Type")
        values = {key: unit_values(path, key) for key in keys}
        assert values["User"] == ["footfall"], path.name
        assert values["ProtectSystem"] == ["strict"], path.name
        assert values["NoNewPrivileges"] == ["yes"], path.name
        assert unit_values(path, "ReadWritePaths") == ["/var/lib/footfall"], path.name
        assert unit_values(path, "EnvironmentFile") == ["/etc/footfall/footfall.env"], path.name
        if values["Type"] != ["oneshot"]:
            assert values["Restart"] == ["on-failure"], path.name


def test_compose_file_parses_and_pins_every_image() -> None:
    """compose.yaml is YAML; every image carries a version tag (never latest), Kafka the stack's own."""
    services = compose()["services"]
    for name, service in services.items():
        image = service["image"]
        repository, _, tag = image.rpartition(":")
        assert repository, (name, image)
        assert re.fullmatch(r"[\w.-]*\d[\w.-]*", tag), f"{name}: {image} has no version tag"
    assert {s["image"] for n, s in services.items() if n.startswith("kafka-")} == {
        f"docker.io/apache/kafka:{KAFKA_VERSION}"
    }


def test_compose_runs_the_whole_stack() -> None:
    """Three brokers with RF 3 and min ISR 2, Redis with AOF, Spark with two workers, one beat."""
    services = compose()["services"]
    expected = {"mongo", "redis", "minio", "spark-master", "spark-worker-1", "spark-worker-2", "proxy", "migrate",
                "setup", "web", "collector", "realtime-1", "realtime-2", "archiver", "celery",
                "celery-beat"}  # fmt: skip
    assert expected <= set(services)
    brokers = [s for n, s in services.items() if n.startswith("kafka-")]
    assert len(brokers) == 3
    for broker in brokers:
        assert broker["environment"]["KAFKA_DEFAULT_REPLICATION_FACTOR"] == "3"
        assert broker["environment"]["KAFKA_MIN_INSYNC_REPLICAS"] == "2"
    assert "--appendonly" in services["redis"]["command"]
    beats = [n for n, s in services.items() if "beat" in s.get("command", [])]
    assert beats == ["celery-beat"]


def test_nginx_accepts_the_proxy_example(tmp_path: Path) -> None:
    """nginx -t accepts deploy/proxy/nginx with a throw-away certificate (Debian's nginx from the stack)."""
    conf = proxy_config(tmp_path)
    proc = subprocess.run([str(nginx_binary()), "-t", "-p", str(tmp_path), "-c", str(conf)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_nginx_goes_with_one_trusted_proxy() -> None:
    """The proxy appends the client to X-Forwarded-For and overrides X-Forwarded-Proto, as
    FOOTFALL_TRUSTED_PROXIES=1 expects; it passes batches the API itself may refuse."""
    site = (NGINX / "footfall.conf").read_text()
    assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in site
    assert "proxy_set_header X-Forwarded-Proto https;" in site
    assert "$remote_addr" not in site  # no client address in the proxy's log either
    limit = re.search(r"client_max_body_size (\d+)m;", site)
    assert limit is not None
    assert int(limit.group(1)) << 20 > MAX_BATCH_BYTES
    for upstream in ("upstream.conf", "upstream-compose.conf"):
        assert "upstream footfall_web {" in (NGINX / upstream).read_text()
        assert "upstream footfall_collector {" in (NGINX / upstream).read_text()
    trusted = [env["FOOTFALL_TRUSTED_PROXIES"] for env in (read_env_file(ENV_EXAMPLES[0]),)]
    trusted += [s["environment"]["FOOTFALL_TRUSTED_PROXIES"] for n, s in footfall_services().items() if n == "web"]
    assert trusted == ["1", "1"]


def test_nginx_sends_every_collector_route_to_the_collector() -> None:
    """Each route of collector/urls.py, and nothing of the API or the dashboard, matches a
    location the proxy sends to the collector process."""
    from django.urls import URLPattern

    from collector.urls import urlpatterns

    site = (NGINX / "footfall.conf").read_text()
    locations = re.findall(r"location ~ (\S+) \{\s*proxy_pass http://footfall_collector;", site)
    assert len(locations) >= 2

    def to_collector(path: str) -> bool:
        return any(re.search(pattern, path) for pattern in locations)

    for route in urlpatterns:
        assert isinstance(route, URLPattern)
        path = "/" + str(route.pattern).replace("<slug:site_id>", "my-site_1")
        assert to_collector(path), f"{path} would reach the web process"
    for path in ("/api/v1/sites/my-site/timeseries", "/api/v1/sites/my-site/events/signup/properties/plan",
                 "/dashboard/", "/collect/x", "/api/v1/health", "/admin/", "/xcollect"):  # fmt: skip
        assert not to_collector(path), f"{path} would reach the collector"


# ---- processes and settings ----------------------------------------------------------------


def _check_process(where: str, argv: list[str]) -> None:
    program = argv[0].removeprefix(INSTALL_PREFIX + "/bin/")
    assert (VENV_BIN / program).exists(), f"{where}: {program} is not a command of the installed server"
    args = argv[1:]
    if program == "django-admin":
        from django.core.management import get_commands

        assert args[0] in set(get_commands()), f"{where}: no command {args[0]}"
    elif program == "gunicorn":
        config = args[args.index("-c") + 1].removeprefix("python:")
        __import__(config)
        app_module = next(a for a in args if not a.startswith("-") and a != args[args.index("-c") + 1]).split(":")[0]
        assert hasattr(__import__(app_module, fromlist=["application"]), "application"), where
    elif program == "celery":
        module = args[args.index("-A") + 1]
        assert hasattr(__import__(module, fromlist=["app"]), "app"), where
        assert {"worker", "beat"} & set(args), where
    elif program == "spark-class":
        import pyspark

        class_file = args[0].replace(".", "/") + ".class"
        jars = (Path(pyspark.__file__).parent / "jars").glob("spark-core_*.jar")
        assert any(class_file in zipfile.ZipFile(jar).namelist() for jar in jars), f"{where}: no class {args[0]}"
    else:
        pytest.fail(f"{where}: {program} is not a process this test knows how to check")


def test_every_process_is_a_command_of_the_server() -> None:
    """Each command line names an installed command, a Django command, an importable app, a Spark class."""
    seen = list(processes())
    assert len(seen) >= 15
    for where, argv in seen:
        _check_process(where, argv)


def test_every_setting_is_one_the_app_reads() -> None:
    """Variables set for Footfall's processes in units, env files and compose are all read by it."""
    known = app_settings() | set(TOOL_SETTINGS)
    set_here: dict[str, set[str]] = {}
    for path in unit_files():
        set_here[path.name] = set(unit_environment(path))
    for path in ENV_EXAMPLES[:1]:  # the compose one feeds compose's own ${…} references
        set_here[path.name] = set(read_env_file(path))
    for name, service in footfall_services().items():
        set_here[f"compose {name}"] = set(service.get("environment") or {})
    for instruction, args in containerfile_instructions():
        if instruction == "ENV":
            set_here.setdefault("Containerfile", set()).update(re.findall(r"([A-Z][A-Z0-9_]*)=", args))
    unknown = {where: sorted(names - known) for where, names in set_here.items() if names - known}
    assert unknown == {}
    compose_refs = set(re.findall(r"\$\{([A-Z0-9_]+):", COMPOSE.read_text()))
    assert compose_refs == set(read_env_file(ENV_EXAMPLES[1]))


def test_no_secret_is_committed() -> None:
    """Secrets are placeholders or compose ${…:?} references; no key file, no .env file."""
    values: list[tuple[str, str, str]] = []
    for path in ENV_EXAMPLES:
        values += [(path.name, k, v) for k, v in read_env_file(path).items()]
    for path in unit_files():
        values += [(path.name, k, v) for k, v in unit_environment(path).items()]
    for name, service in compose()["services"].items():
        values += [(f"compose {name}", k, str(v)) for k, v in (service.get("environment") or {}).items()]
    for where, name, value in values:
        if SECRET_NAME.search(name) and not name.endswith("_FILE"):
            assert PLACEHOLDER.match(value), f"{where}: {name} holds a value, not a placeholder"
        password = re.search(r"://[^/@:]+:([^@]+)@", value)
        if password:
            assert PLACEHOLDER.match(password.group(1)), f"{where}: {name} holds a password"
    for path in DEPLOY.rglob("*"):
        if path.suffix in {".pem", ".key", ".crt"} or path.name == ".env":
            pytest.fail(f"{path} looks like a committed secret")
        if path.is_file() and "PRIVATE KEY-----" in path.read_text(errors="ignore"):
            pytest.fail(f"{path} holds a private key")


# ---- the container image -------------------------------------------------------------------


def test_containerfile_copies_the_server_sources_and_installs_its_wheel(tmp_path: Path) -> None:
    """The COPY lines carry every package of the wheel and the lock; from just them, the wheels
    build and the Containerfile's `uv export` lines give each image its locked requirements,
    every one hashed; the install lines take those, then the built wheels with no resolving."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    instructions = containerfile_instructions()
    copied = []
    for instruction, args in instructions:
        if instruction == "COPY" and not args.startswith("--from"):
            *sources, _dest = args.split()
            copied += sources
    source = tmp_path / "src"
    for item in copied:
        path = REPO / item
        assert path.exists(), f"COPY {item}: no such file in the checkout"
        if path.is_dir():
            shutil.copytree(path, source / item, dirs_exist_ok=True,  # the tracker's stage copies a part first
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "node_modules"))  # fmt: skip
        else:
            (source / item).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, source / item)
    packages = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert packages | {"host", "uv.lock", "deploy/locked_uv.py"} <= {item.strip("/") for item in copied}

    wheels = tmp_path / "wheels"
    built_wheels = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels),
         str(source / "host"), str(source)],
        check=False, timeout=600, capture_output=True, text=True,
    )  # fmt: skip
    assert built_wheels.returncode == 0, built_wheels.stdout + built_wheels.stderr
    built = {path.name for path in wheels.glob("*.whl")}
    runs = " && ".join(args for instruction, args in instructions if instruction == "RUN")
    exports = re.findall(r"uv (export [^&]*?--output-file /wheels/(\w+\.txt))", runs)
    assert [name for _, name in exports] == ["server.txt", "batch.txt"]
    uv = Path(sys.executable).parent / "uv"
    locked: dict[str, str] = {}
    for command, name in exports:
        argv = [str(uv), *shlex.split(command.replace("/wheels/", str(wheels) + "/")), "--quiet"]
        subprocess.run(
            argv, cwd=source, check=True, timeout=120, capture_output=True, env={**os.environ, "UV_OFFLINE": "1"}
        )
        locked[name] = (wheels / name).read_text()
        pins = re.findall(r"^([\w.-]+)==[^\n]*\\\n\s+--hash=sha256:", locked[name], re.M)
        assert len(pins) == len(re.findall(r"^[\w.-]+==", locked[name], re.M)) > 50, f"{name}: a pin without a hash"
        assert not {"footfall", "footfall-capture"} & set(pins), f"{name} names our own projects: they come as wheels"
    assert "dash==" in locked["server.txt"]
    assert "pyspark==" not in locked["server.txt"]
    assert "pyspark==" in locked["batch.txt"]
    installs = re.findall(r"uv pip install ([^&]*)", runs)
    assert [" ".join(args.split()) for args in installs if "--require-hashes" in args] == [
        "--no-cache --require-hashes -r /wheels/server.txt",
        "--no-cache --require-hashes -r /wheels/batch.txt",
    ]
    [own] = [args for args in installs if "--no-deps" in args]
    patterns = re.findall(r"/wheels/([\w*.-]+\.whl)", own)
    assert sorted(name for pattern in patterns for name in built if Path(name).match(pattern)) == sorted(built)
    python = re.search(r"python:(\d+\.\d+)", next(a for i, a in instructions if i == "FROM" and "python:" in a))
    assert python is not None
    assert project["project"]["requires-python"] == f">={python.group(1)}"


def test_bootstrap_installs_the_uv_the_lock_pins() -> None:
    """deploy/locked_uv.py gives the lock's uv release with its hashes: the one bootstrap.sh
    installed into this virtualenv."""
    from deploy.locked_uv import uv_requirement

    uv = Path(sys.executable).parent / "uv"
    version = subprocess.run([str(uv), "--version"], capture_output=True, text=True, check=True).stdout.split()[1]
    name, *hashes = uv_requirement().split()
    assert name == f"uv=={version}"
    assert len(hashes) > 10  # the sdist and a wheel per platform
    assert all(re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", h) for h in hashes)
