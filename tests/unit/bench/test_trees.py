"""The bench's source trees: a worker of one checkout must import nothing from another."""

from __future__ import annotations

from pathlib import Path

from bench.trees import Tree, checkout_of, foreign_modules


def test_modules_of_another_checkout_are_foreign(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    files = {
        "realtime.store": str(old / "realtime" / "store.py"),
        "footfall_capture.events": str(new / "host" / "footfall_capture" / "events.py"),
        "redis": "/usr/lib/python3/dist-packages/redis/__init__.py",
        "sys": None,
    }
    assert foreign_modules(files, old, [old, new]) == [f"footfall_capture.events ({files['footfall_capture.events']})"]
    assert foreign_modules({k: v for k, v in files.items() if k != "footfall_capture.events"}, old, [new]) == []


def test_checkout_of_a_host_package_is_the_checkout_above_host() -> None:
    assert checkout_of("/w/new/host/footfall_capture/__init__.py") == Path("/w/new")
    assert checkout_of("/w/old/realtime/__init__.py") == Path("/w/old")


def test_a_tree_puts_its_host_and_root_first_on_the_import_path(tmp_path: Path) -> None:
    (tmp_path / "host").mkdir()
    env = Tree("old", tmp_path, "abc").env({"PYTHONPATH": "/elsewhere", "X": "1"})
    assert env["PYTHONPATH"].split(":") == [str(tmp_path / "host"), str(tmp_path), "/elsewhere"]
    assert env["X"] == "1"
    assert Tree("old", tmp_path / "none", "abc").env({})["PYTHONPATH"] == ""


def test_a_tree_runs_with_its_own_settings(tmp_path: Path) -> None:
    """The realtime bench's baseline predates the project package: each tree names its own settings."""
    assert Tree("old", tmp_path, "abc").env({"DJANGO_SETTINGS_MODULE": "x"})["DJANGO_SETTINGS_MODULE"] == (
        "footfall.settings")  # fmt: skip
    (tmp_path / "footfall_server").mkdir()
    (tmp_path / "footfall_server" / "settings.py").write_text("")
    assert Tree("new", tmp_path, "abc").env({})["DJANGO_SETTINGS_MODULE"] == "footfall_server.settings"


def test_batch_size_only_from_a_positive_integer_default() -> None:
    assert Tree("new", Path("/"), "abc", defaults={"batch_size": 5000}).batch_size == 5000
    assert Tree("new", Path("/"), "abc", defaults={}).batch_size is None
