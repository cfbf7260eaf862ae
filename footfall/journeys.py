"""Journeys' shared words: what a step is called, how far a journey goes, and how much of a session
the nightly rollup keeps (``docs/reports.md``, "Journeys"). Pure: the Spark transform
(:mod:`spark_jobs.journeys`), the stored documents (:mod:`historical.journeys`) and the query layer
(:mod:`query.journeys`) all read these, so the three agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from footfall.goals import EVENT_NAME

# Steps of an answer: a journey goes at most this many steps from its start or end point.
MAX_STEPS: Final = 20
# The most steps of one session the rollup keeps: a session longer than this (after reloads are
# collapsed) is cut there, and journeys from a step first reached after it do not count it.
STORED_STEPS_CAP: Final = 100
# Labels of an answer that are not steps. Page paths start with "/" and event names with a letter
# or digit (footfall.goals.EVENT_NAME), so none of these can be a step's own label.
EXIT: Final = "(exit)"  # the session ended after the step before
ENTRANCE: Final = "(entrance)"  # the session started at the step after (backwards)
MORE: Final = "(more)"  # the session went on, but past what the rollup kept of it
ENDS: Final = (EXIT, ENTRANCE, MORE)
DIRECTIONS: Final = ("next", "previous")


def is_step_label(text: str) -> bool:
    """Whether ``text`` can name a step: a page path (``/…``, no control characters) or an event name."""
    if text.startswith("/"):
        return len(text) <= 2048 and not any(ord(c) < 32 for c in text)
    return bool(EVENT_NAME.match(text))


def kept_length(steps: Sequence[str], cap: int = STORED_STEPS_CAP, depth: int = MAX_STEPS) -> int:
    """How many leading steps of a session (reloads collapsed) the rollup keeps: up to ``depth`` steps
    past the last step that first appears within the first ``cap``, and never more than ``cap``.

    Every step's first occurrence within the first ``cap`` steps is then kept together with all the
    steps before it and ``depth`` steps after it (unless ``cap`` cuts them), so any journey of up to
    ``depth`` steps from a start or to an end point there is answered exactly. A session cycling
    between two pages keeps ``depth`` + 2 steps however long it runs. (Spark computes the same
    with array functions: :func:`spark_jobs.journeys.journey_sessions`.)"""
    head = list(steps[:cap])
    if not head:
        return 0
    last_new = max(head.index(label) for label in set(head)) + 1  # 1-based
    return min(len(steps), last_new + depth, cap)
