"""What the merge needs of each store: the batch layer's settled rollups and the speed layer's
recent counters, as two narrow protocols.

:class:`query.service.QueryService` and :class:`query.conversions.Conversions` read through
them only, so the lambda merge runs over MongoDB and Redis in production
(:class:`historical.reads.RollupReads`, :class:`realtime.reads.RealtimeQueries`) and over
in-memory readers in its unit tests. Times are epoch milliseconds, days site-local
``YYYY-MM-DD`` strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from footfall.goals import GoalSpec
from footfall.revenue import RevenueSums
from historical.imported import ImportSummary
from historical.journeys import JourneyDays, JourneyRow
from historical.reads import FunnelHistory, HourDocs, Settlement, Sums
from realtime.reads import Engagement, EventRow, GoalCount, LiveView, Row

# The answers' shapes, for the query layer's callers (the API, the dashboard and the alerts read
# through query/ only).
__all__ = [
    "Engagement",
    "EventRow",
    "FunnelHistory",
    "GoalCount",
    "HourDocs",
    "ImportSummary",
    "ImportedHistory",
    "JourneyDays",
    "JourneyRow",
    "LiveView",
    "RecentReads",
    "Row",
    "SettledReads",
    "Settlement",
    "Sums",
]


class SettledReads(Protocol):
    """The batch layer's rollups of settled days (exact)."""

    def settlement(self, site: str, since: str) -> Settlement:
        """The completed days of ``site`` from ``since`` on, and the watermark."""
        ...

    def daily(self, site: str, days: Iterable[str]) -> dict[str, dict]:
        """The day documents (totals) of ``days``, by day."""
        ...

    def hourly(self, site: str, tz: str, days: Iterable[str]) -> HourDocs:
        """The hour documents of ``days``, by (day, bucket start)."""
        ...

    def filtered_daily(self, site: str, dim: str, value: str, days: Iterable[str]) -> dict[str, dict]:
        """Per day, the page views and visitors of one value of ``dim``."""
        ...

    def breakdown(
        self, site: str, dim: str, days: Iterable[str], *, ref: str | None = None, page: str | None = None
    ) -> dict[str, Sums]:
        """Per value of ``dim``, its sums over ``days`` (one side of a referrer→page pair with ``ref``/``page``)."""
        ...

    def goal_counts(self, site: str, days: Iterable[str]) -> dict[str, tuple[int, int]]:
        """Per goal id: (conversions, unique conversions summed per day)."""
        ...

    def goal_revenue(self, site: str, days: Iterable[str]) -> dict[str, RevenueSums]:
        """Per revenue goal id: revenue per currency, conversions without revenue."""
        ...

    def goal_source_revenue(
        self, site: str, dim: str, goal_id: str, days: Iterable[str], values: Iterable[str]
    ) -> dict[str, RevenueSums]:
        """Per one of ``values`` of goal source dimension ``dim``: goal ``goal_id``'s revenue per currency."""
        ...

    def event_properties(self, site: str, event: str, prop: str, days: Iterable[str]) -> dict[str, Sums]:
        """Per value of property ``prop`` of custom event ``event``: its events and visitors."""
        ...

    def funnel(self, site: str, funnel_id: str, days: Iterable[str]) -> FunnelHistory | None:
        """The funnel over ``days``; None when no day has its documents."""
        ...

    def goal_days(self, site: str, goal_id: str, days: Iterable[str]) -> dict[str, tuple[int, int]]:
        """Per day the goal was reached: (conversions, unique conversions)."""
        ...

    def event_property_names(self, site: str, event: str, days: Iterable[str]) -> dict[str, int]:
        """The property names of custom event ``event``, with their events."""
        ...

    def goal_sources(self, site: str, dim: str, goal_id: str, days: Iterable[str]) -> dict[str, tuple[int, int]]:
        """Per value of goal source dimension ``dim``: (converting visitors, conversions)."""
        ...

    def goal_base(self, site: str, dim: str, days: Iterable[str], values: Iterable[str]) -> dict[str, int]:
        """Per one of ``values`` of goal source dimension ``dim``: the visitors attributed to it."""
        ...

    def journeys(self, site: str, days: Iterable[str]) -> JourneyDays:
        """The kept session steps of the ``days`` rolled up with journeys, by day."""
        ...


class ImportedHistory(Protocol):
    """Daily figures imported from another product (:mod:`historical.imported`): whole days,
    totals and a few dimensions, no sessions' details, engagement, funnels or hours. ``days``
    arguments map each day to the import holding it, as :meth:`days` gives them."""

    def days(self, site: str, first: str, last: str) -> dict[str, str]:
        """The days from ``first`` to ``last`` an import covers, with its id."""
        ...

    def daily(self, site: str, days: Mapping[str, str]) -> dict[str, Sums]:
        """The totals of each day that has them (visits as sessions)."""
        ...

    def breakdown(self, site: str, dim: str, days: Mapping[str, str]) -> dict[str, Sums]:
        """Per value of ``dim``, its counts summed over ``days``."""
        ...

    def filtered_daily(self, site: str, dim: str, value: str, days: Mapping[str, str]) -> dict[str, Sums]:
        """Per day, the counts of one value of ``dim``."""
        ...


class RecentReads(Protocol):
    """The speed layer's minutely counters of recent time (page views exact, visitors estimated)."""

    def spans(
        self, site: str, metric: str, spans: list[tuple[int, int]], filter_: tuple[str, str] | None = None
    ) -> list[int]:
        """``metric`` (page views or visitors) of each ``[start, end)`` span."""
        ...

    def totals(self, site: str, start_ms: int, end_ms: int) -> dict[str, int]:
        """Page views, events, bot events and visitors of the range."""
        ...

    def ranking(
        self, site: str, dim: str, start_ms: int, end_ms: int, limit: int = 10, *, rest_as_other: bool = False
    ) -> list[tuple[str, int]]:
        """The values of ``dim`` with most page views, as ``(value, page views)``."""
        ...

    def pairs(
        self, site: str, start_ms: int, end_ms: int, limit: int = 10, *, ref: str | None = None, path: str | None = None
    ) -> list[tuple[str, str | None, int]]:
        """One side of the referrer→page pairs of the other: ``(shown, member or None, page views)``."""
        ...

    def visitors(self, site: str, dim: str, start_ms: int, end_ms: int, values: Sequence[str]) -> list[int]:
        """Unique visitors of each of ``values`` of ``dim``."""
        ...

    def other_count(self, site: str, dim: str, start_ms: int, end_ms: int) -> int:
        """What the range counted under ``(other)`` in ``dim``."""
        ...

    def engagement(
        self, site: str, dim: str, start_ms: int, end_ms: int, values: Sequence[str] | None = None
    ) -> dict[str, Engagement]:
        """Engaged time and reports per value of ``dim``."""
        ...

    def custom_events(
        self, site: str, start_ms: int, end_ms: int, limit: int = 10, *, rest_as_other: bool = False
    ) -> list[EventRow]:
        """The custom events with most events, with their visitors."""
        ...

    def event_properties(
        self,
        site: str,
        event: str,
        prop: str,
        start_ms: int,
        end_ms: int,
        limit: int = 10,
        *,
        rest_as_other: bool = False,
    ) -> list[EventRow]:
        """The values of property ``prop`` of custom event ``event`` with most events (with
        ``rest_as_other`` the values left out summed in one ``(other)`` row)."""
        ...

    def goal_counts(self, site: str, goals: Sequence[GoalSpec], start_ms: int, end_ms: int) -> dict[str, GoalCount]:
        """Conversions and unique conversions of each goal, by goal id."""
        ...

    def goal_revenue(self, site: str, goals: Sequence[GoalSpec], start_ms: int, end_ms: int) -> dict[str, RevenueSums]:
        """Revenue per currency of each revenue goal, by goal id (``without`` 0: not counted here)."""
        ...

    def live(self, site: str, start_ms: int, end_ms: int, now_ms: int, limit: int = 10, flows: int = 40) -> LiveView:
        """Everything the live view shows."""
        ...
