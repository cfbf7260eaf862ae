"""The rollup job's --goals: goal definitions per site, or a clear error before Spark starts."""

from __future__ import annotations

import json

import pytest

from footfall.goals import GoalSpec
from spark_jobs.rollup import main, parse_goals


def test_goals_read_per_site() -> None:
    """Each site's goals come back as GoalSpecs, in order; no --goals means none."""
    goals = [GoalSpec("1", "page", path="/docs/*"), GoalSpec("2", "event", event="signup", prop="plan", value="pro")]
    text = json.dumps({"s": [g.to_json() for g in goals]})
    assert parse_goals(text, ["s", "t"]) == {"s": goals}
    assert parse_goals(None, ["s"]) == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{nope", "not JSON"),
        ('["s"]', "must be a JSON object"),
        ('{"x": []}', "sites not rolled up: x"),
        ('{"s": [{"goal_id": "1", "kind": "page", "path": "docs"}]}', "site 's', goal 0: path: must start with /"),
        ('{"s": [{"goal_id": "1", "kind": "event", "event": "a b"}]}', "site 's', goal 0: event:"),
        ('{"s": [{"goal_id": "1", "kind": "page", "path": "/"}, {"goal_id": "1", "kind": "page", "path": "/a"}]}',
         "goal_id of its own"),
        ('{"s": ["x"]}', "goal 0: must be a JSON object"),
    ],
)  # fmt: skip
def test_invalid_goals_name_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_goals(text, ["s"])


def test_the_job_fails_on_invalid_goals_before_starting_spark(monkeypatch, capsys) -> None:
    """Exit status 2 and the reason on stderr."""
    monkeypatch.setenv("FOOTFALL_ROLLUP_MONGO_URL", "mongodb://127.0.0.1:1")
    argv = ["--from", "2025-11-24", "--to", "2025-11-24", "--sites", '{"s": "UTC"}', "--archive-url", "file:///x"]
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--goals", '{"s": [{"kind": "nope"}]}'])
    assert exit_.value.code == 2
    assert "--goals: site 's', goal 0: kind: must be 'page' or 'event'" in capsys.readouterr().err
