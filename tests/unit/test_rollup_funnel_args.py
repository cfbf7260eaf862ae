"""The rollup job's ``--funnels`` argument and the funnel documents it builds per site and day."""

from __future__ import annotations

import json

import pytest

from footfall.goals import FUNNEL_TIME_BOUNDS_MS, FunnelSpec, GoalSpec
from historical.rollups import definitions_file
from spark_jobs.rollup import funnel_documents, parse_funnels

SPEC = FunnelSpec("7", (GoalSpec("a", "page", path="/a"), GoalSpec("b", "event", event="signup")), name="Signup")
ZEROS = [0] * (len(FUNNEL_TIME_BOUNDS_MS) + 1)


def test_funnels_round_trip_through_the_file_the_job_reads():
    """run_rollup's file, read back as the job reads ``--funnels @file``, gives the same funnels."""
    with definitions_file({"s": [SPEC], "t": []}) as path:
        assert path is not None
        assert parse_funnels(f"@{path}") == {"s": [SPEC]}  # a site without funnels is left out
    assert not path.exists()  # removed with its directory


def test_no_funnels_no_file():
    """Without funnels the job gets no --funnels argument at all."""
    with definitions_file(None) as path:
        assert path is None


def test_inline_json_is_read_too():
    """A person running the job by hand may give the JSON itself."""
    assert parse_funnels(json.dumps({"s": [SPEC.to_json()]})) == {"s": [SPEC]}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "expected"),
        ('{"s": {}}', "expected"),
        ('{"s": [1]}', "site 's': every funnel must be a JSON object"),
        ('{"s": [{"funnel_id": "1", "steps": []}]}', "site 's': steps: a funnel has 2 to 8 steps"),
        ("{", "Expecting"),
    ],
)
def test_bad_funnels_are_refused_with_the_reason(text: str, message: str):
    """Malformed definitions stop the job before Spark starts, saying what is wrong."""
    with pytest.raises(ValueError, match=message):
        parse_funnels(text)


def test_documents_fill_zeros_for_funnels_and_steps_without_rows():
    """Every funnel given gets a document; steps nobody reached that day are zeros."""
    step1 = {"funnel_id": "7", "step": 1, "visitors": 3, "median_ms": None, "times_ms": ZEROS}
    other = FunnelSpec("8", SPEC.steps, name="Other")
    docs = funnel_documents([SPEC, other], {"7": {1: step1}})
    zero = {"visitors": 0, "median_ms": None, "times_ms": ZEROS}
    assert docs == [
        {"funnel_id": "7", "name": "Signup", "steps": [{"visitors": 3, "median_ms": None, "times_ms": ZEROS}, zero]},
        {"funnel_id": "8", "name": "Other", "steps": [zero, zero]},
    ]
