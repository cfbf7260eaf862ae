"""Source trees a bench runs the product from: this checkout, or a temporary detached ``git worktree`` of an
older commit (the baseline). Each tree's processes import that tree's code only, which :meth:`Tree.verify`
proves with the same interpreter, environment and working directory before anything is measured."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import PYTHON, REPO, BenchError

# Run in a tree as its workers run: Django set up as manage.py does, the command's module imported (and so
# everything it imports); prints where every loaded module came from and the command's option defaults.
PROBE = """
import json, os, sys
import django
django.setup()
from django.core.management import load_command_class
command = load_command_class(sys.argv[1], sys.argv[2])
defaults = vars(command.create_parser("manage.py", sys.argv[2]).parse_args([]))
files = {name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())}
print(json.dumps({"files": files, "defaults": defaults}, default=str))
"""
# Where the virtualenv's editable installs of the project point (no PYTHONPATH, outside any checkout).
EDITABLE_PROBE = """
import importlib.util, json
found = {}
for name in ("footfall", "footfall_capture", "realtime"):
    spec = importlib.util.find_spec(name)
    if spec is not None and spec.origin:
        found[name] = spec.origin
print(json.dumps(found))
"""


def checkout_of(origin: str) -> Path:
    """The checkout holding a top-level package's ``__init__.py`` (``host/`` packages: the checkout above it)."""
    root = Path(origin).resolve().parent.parent
    return root.parent if root.name == "host" else root


def foreign_modules(files: Mapping[str, str | None], tree: Path, others: Iterable[Path]) -> list[str]:
    """Modules (``name -> file``) loaded from one of the ``others`` checkouts, not from ``tree``."""
    tree, others = tree.resolve(), [p.resolve() for p in others if p.resolve() != tree.resolve()]
    foreign = []
    for name, file in sorted(files.items()):
        if not file:
            continue
        path = Path(file).resolve()
        if not path.is_relative_to(tree) and any(path.is_relative_to(other) for other in others):
            foreign.append(f"{name} ({file})")
    return foreign


def editable_roots(env: Mapping[str, str]) -> list[Path]:
    """The checkouts the virtualenv's editable installs import the project from, when nothing overrides them."""
    clean = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    out = subprocess.run([PYTHON, "-c", EDITABLE_PROBE], env=clean, cwd="/", capture_output=True, text=True)
    if out.returncode != 0:
        raise BenchError(f"could not locate the project's editable installs:\n{out.stderr}")
    return sorted({checkout_of(origin) for origin in json.loads(out.stdout).values()})


@dataclass
class Tree:
    """A checkout to run ``manage.py`` commands from: ``label`` (old/new), its root, commit and environment."""

    label: str
    root: Path
    rev: str
    dirty: bool = False
    defaults: dict[str, Any] = field(default_factory=dict)

    @property
    def batch_size(self) -> int | None:
        """The default ``--batch-size`` of the command :meth:`verify` probed, if it has that option."""
        size = self.defaults.get("batch_size")
        return int(size) if isinstance(size, int) and size > 0 else None

    @property
    def settings_module(self) -> str:
        """The tree's Django settings: ``footfall_server.settings``, or ``footfall.settings`` in a tree from
        before the project package (2026-11-28), such as the realtime bench's baseline."""
        project = "footfall_server" if (self.root / "footfall_server" / "settings.py").is_file() else "footfall"
        return f"{project}.settings"

    def env(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` with this tree's ``host/`` and root first on the import path, ahead of editable installs, and
        this tree's settings."""
        paths = [str(p) for p in (self.root / "host", self.root) if p.is_dir()]
        rest = [p for p in base.get("PYTHONPATH", "").split(os.pathsep) if p]
        return {**base, "PYTHONPATH": os.pathsep.join(paths + rest), "PYTHONUNBUFFERED": "1",
                "DJANGO_SETTINGS_MODULE": self.settings_module}  # fmt: skip

    def verify(self, base: Mapping[str, str], others: Iterable[Path], app: str, command: str) -> None:
        """Fail unless ``manage.py command`` of this tree imports nothing from the ``others`` checkouts; keep the
        command's option defaults (``self.defaults``)."""
        argv = [PYTHON, "-c", PROBE, app, command]
        out = subprocess.run(argv, env=self.env(base), cwd=self.root, capture_output=True, text=True)
        if out.returncode != 0:
            raise BenchError(f"{self.label} tree ({self.root}): {command} cannot be imported:\n{out.stderr[-3000:]}")
        probe = json.loads(out.stdout.strip().splitlines()[-1])
        if foreign := foreign_modules(probe["files"], self.root, others):
            raise BenchError(f"the {self.label} worker would run code of another checkout: {', '.join(foreign[:8])}")
        own = probe["files"].get(f"{app}.management.commands.{command}") or ""
        if not Path(own).resolve().is_relative_to(self.root.resolve()):
            raise BenchError(f"the {self.label} worker's command comes from {own}, not from {self.root}")
        self.defaults = probe["defaults"]


def git(*argv: str, cwd: Path = REPO) -> str:
    out = subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise BenchError(f"git {' '.join(argv)} failed: {out.stderr.strip()}")
    return out.stdout.strip()


def worktrees() -> list[Path]:
    """Every checkout of this repository (``git worktree list``), the baseline's included."""
    listed = git("worktree", "list", "--porcelain").splitlines()
    return [Path(line.removeprefix("worktree ")) for line in listed if line.startswith("worktree ")]


def current_tree(label: str = "new") -> Tree:
    """This checkout as it is (``dirty`` when it has uncommitted changes to tracked files)."""
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return Tree(label, REPO, git("rev-parse", "--short=12", "HEAD"), dirty)


def baseline_tree(rev: str, cleanup: contextlib.ExitStack, label: str = "old") -> Tree:
    """A detached ``git worktree`` of ``rev`` in a temporary directory; ``cleanup`` removes it (also on failure)."""
    commit = git("rev-parse", "--verify", "--short=12", f"{rev}^{{commit}}")
    parent = Path(tempfile.mkdtemp(prefix=f"footfall-bench-{commit}-"))
    root = parent / "tree"
    cleanup.callback(shutil.rmtree, parent, ignore_errors=True)  # runs last: after git forgot the worktree
    cleanup.callback(subprocess.run, ["git", "worktree", "prune"], cwd=REPO, check=False)
    cleanup.callback(
        subprocess.run, ["git", "worktree", "remove", "--force", str(root)], cwd=REPO, check=False, capture_output=True
    )
    git("worktree", "add", "--detach", "--quiet", str(root), commit)
    return Tree(label, root, commit)
