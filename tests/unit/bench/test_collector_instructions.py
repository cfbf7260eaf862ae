"""bench.collector_bench --instructions: reading callgrind's dumps and turning them into the table."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.collector_bench import VALGRIND_THREAD, Dump, per_variant, read_dump, report


def _dump_file(path: Path, trigger: str, thread: int, totals: int | None) -> Path:
    """A callgrind output file as valgrind 3.19 writes it with --separate-threads=yes
    (header, then cost lines, then totals and summary), trimmed to what matters."""
    lines = [
        "# callgrind format",
        "version: 1",
        "creator: callgrind-3.19.0",
        "pid: 7566",
        "cmd:  /usr/bin/python3 -m bench.collector_bench --in-callgrind /tmp/x",
        "part: 3",
        f"thread: {thread}",
        "",
        "desc: I1 cache: ",
        f"desc: Trigger: {trigger}",
        "",
        "positions: line",
        "events: Ir",
    ]
    if totals is not None:
        lines += ["fn=(1) main", "0 123", f"totals: {totals}", f"summary: {totals}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_read_dump_takes_the_label_thread_and_summary(tmp_path: Path) -> None:
    dump = read_dump(_dump_file(tmp_path / "callgrind.7566.3-02", "dump B.0", 2, 38_272_345))
    assert dump == Dump("B.0", 2, 38_272_345)


def test_read_dump_skips_valgrinds_own_dump_at_exit(tmp_path: Path) -> None:
    assert read_dump(_dump_file(tmp_path / "callgrind.7566-01", "Program termination", 1, 5)) is None


def test_read_dump_counts_a_thread_without_costs_as_zero(tmp_path: Path) -> None:
    assert read_dump(_dump_file(tmp_path / "callgrind.7566.3-05", "dump A.1", 5, None)) == Dump("A.1", 5, 0)


def test_per_variant_is_the_median_per_page_view_and_ignores_the_warm_up() -> None:
    dumps = [
        Dump("warm-up", 1, 10**9),
        Dump("A.0", 1, 3_000), Dump("A.1", 1, 3_300), Dump("A.2", 1, 9_000),
        Dump("B.0", 1, 3_600), Dump("B.0", 2, 600), Dump("B.1", 1, 3_900), Dump("B.1", 2, 660),
    ]  # fmt: skip
    results = per_variant(dumps, requests=3)
    assert set(results) == {"A", "B"}
    assert results["A"] == {1: 1_100.0, 2: 0.0}  # median of 1,000 / 1,100 / 3,000; no thread 2 in A
    assert results["B"] == {1: 1_250.0, 2: 210.0}


def test_per_variant_keeps_variant_names_with_dots_and_dashes() -> None:
    results = per_variant([Dump("B-parse_utm-canonicalize_url.0", 1, 10)], requests=1)
    assert results == {"B-parse_utm-canonicalize_url": {1: 10.0}}


def test_report_rows_follow_the_given_order_with_the_first_as_baseline() -> None:
    results = {
        "A": {1: 2_856_000.0, 2: 0.0, 3: 10.0},
        "B": {1: 2_889_000.0, 2: 127_000.0, 3: 20.0},
        "B-geolocate": {1: 2_889_000.0, 2: 112_000.0, 3: 20.0},
    }
    lines = report(results, {1: "request", 2: "footfall-tracker"})
    assert lines[0].split()[:3] == ["variant", "request", "footfall-tracker"]  # thread 3 did < 50 Ir anywhere
    assert [line.split()[0] for line in lines[1:]] == ["A", "B", "B-geolocate"]
    b = lines[2].split()
    assert b[1:6] == ["2,889,000", "127,000", "3,016,020", "+160,010", f"{2_856_010 / 3_016_020:.3f}"]


def test_report_names_a_thread_it_has_no_name_for_by_number() -> None:
    lines = report({"A": {1: 100.0, 7: 0.0}, "B": {1: 100.0, 7: 900.0}}, {1: "request"})
    assert "thread 7" in lines[0]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Thread 2: status = VgTs_WaitSys syscall 202 (lwpid 9090)", [("2", "9090")]),
        ("Thread 5: status = VgTs_Empty (lwpid 0)", [("5", "0")]),
        ("==9024==    by 0x4F905E: PyThread_acquire_lock_timed (in /usr/bin/python3.11)", []),
    ],
)
def test_valgrind_thread_lines_are_read_for_their_number_and_kernel_id(
    line: str, expected: list[tuple[str, str]]
) -> None:
    assert VALGRIND_THREAD.findall(line) == expected


def test_report_shows_clocked_threads_but_leaves_them_out_of_the_totals() -> None:
    results = {
        "A": {1: 1_000.0, 2: 0.0, 3: 100.0, 4: 60.0},
        "B": {1: 1_010.0, 2: 90.0, 3: 29_000.0, 4: 2_000.0},
    }
    lines = report(results, {1: "request", 2: "footfall-tracker", 3: "rdk:broker1", 4: "footfall-sink"})
    assert lines[0].split()[:5] == ["variant", "request", "footfall-tracker", "(rdk:broker1)", "(footfall-sink)"]
    assert lines[2].split()[1:] == ["1,010", "90", "29,000", "2,000", "1,100", "+100", f"{1_000 / 1_100:.3f}"]
