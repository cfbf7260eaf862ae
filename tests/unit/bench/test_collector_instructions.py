"""bench.collector_bench --instructions: reading callgrind's dumps and turning them into the table."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.collector_bench import VALGRIND_THREAD, Dump, per_variant, read_dump, report, summarise


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


def test_summarise_totals_the_counted_threads_and_lumps_the_others_as_clocked() -> None:
    results = {
        "A": {1: 1_000.0, 2: 0.0, 3: 100.0, 4: 60.0},
        "B": {1: 1_010.0, 2: 90.0, 3: 29_000.0, 4: 2_000.0},
    }
    rows = summarise(results, {1: "request", 2: "footfall-tracker"})
    assert rows["A"] == {"request": 1_000.0, "footfall-tracker": 0.0, "total": 1_000.0, "clocked": 160.0}
    assert rows["B"] == {"request": 1_010.0, "footfall-tracker": 90.0, "total": 1_100.0, "clocked": 31_000.0}


def test_summarise_counts_a_counted_thread_it_did_not_find_as_zero() -> None:
    rows = summarise({"A": {1: 100.0, 7: 900.0}}, {1: "request"})
    assert rows["A"] == {"request": 100.0, "footfall-tracker": 0.0, "total": 100.0, "clocked": 900.0}


def test_report_rows_follow_the_given_order_with_the_first_as_baseline() -> None:
    rows = {
        "A": {"request": 2_856_000.0, "footfall-tracker": 10.0, "total": 2_856_010.0, "clocked": 5.0},
        "B": {"request": 2_889_000.0, "footfall-tracker": 127_020.0, "total": 3_016_020.0, "clocked": 40_000.0},
    }
    lines = report(rows)
    assert lines[0].split()[:6] == ["variant", "request", "footfall-tracker", "total", "(clocked)", "vs"]
    assert [line.split()[0] for line in lines[1:]] == ["A", "B"]
    b = lines[2].split()
    assert b[1:] == ["2,889,000", "127,020", "3,016,020", "40,000", "+160,010", f"{2_856_010 / 3_016_020:.3f}"]


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
