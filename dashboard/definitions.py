"""The goal and funnel definitions of a site, read from Django's database for Dash callbacks.

Dash 4 runs a callback inside an event loop (its Flask backend goes through asgiref), where
Django refuses ORM calls (``SynchronousOnlyOperation``). So the reads run on a small pool of
worker threads, each opening and recycling its own connection the way a request does
(:func:`django.db.close_old_connections` before and after, which honours ``CONN_MAX_AGE``).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from django.db import close_old_connections

from footfall.goals import FunnelSpec, GoalSpec
from footfall.models import Funnel, Goal

T = TypeVar("T")
TIMEOUT_S = 30.0
_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="dashboard-orm")


def in_worker(fn: Callable[[], T]) -> T:
    """``fn()``'s result, computed on the ORM pool (callbacks of other pages use it too)."""

    def call() -> T:
        close_old_connections()
        try:
            return fn()
        finally:
            close_old_connections()

    return _pool.submit(call).result(timeout=TIMEOUT_S)


def goal_specs(site_id: str) -> list[GoalSpec]:
    """The site's goals in the order they were created."""
    return in_worker(lambda: Goal.specs_by_site([site_id]).get(site_id, []))


def goal_spec(site_id: str, goal_id: object) -> GoalSpec | None:
    """The site's goal of id ``goal_id`` (as the browser sent it), None when the site has none such."""
    return next((g for g in goal_specs(site_id) if g.goal_id == goal_id), None)


def funnel_specs(site_id: str) -> list[FunnelSpec]:
    """The site's funnels in the order they were created."""
    return in_worker(lambda: Funnel.specs_by_site([site_id]).get(site_id, []))
