"""Shapes of the API's responses, for the generated OpenAPI schema (and its fuzz tests).

The views return the query service's dicts directly; these serializers only describe them. Request
bodies have their own modules, whose serializers validate them: :mod:`api.goal_serializers`,
:mod:`api.alert_serializers`.
"""

from __future__ import annotations

from rest_framework import serializers

from footfall.vocabulary import BREAKDOWN_METRICS, GOAL_BREAKDOWN_METRICS, METRICS

SOURCES = ("batch", "imported", "realtime", "missing")


class ErrorDetailSerializer(serializers.Serializer):
    parameter = serializers.CharField(allow_null=True, help_text="the query parameter at fault, if any")
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


class FromRenamedSerializer(serializers.Serializer):
    """Writes its field ``from_`` as ``from``, a Python keyword."""

    def get_fields(self) -> dict:
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields


class RangedSerializer(FromRenamedSerializer):
    """An answer over a range: ``from``, ``to``, ``tz``."""

    from_ = serializers.DateTimeField()
    to = serializers.DateTimeField()
    tz = serializers.CharField()


class SpanSerializer(FromRenamedSerializer):
    buckets = serializers.IntegerField(help_text="buckets (time series) or pieces (other queries) from this source")
    # Plain strings, not date-time: a source's span may be absent (null).
    from_ = serializers.CharField(allow_null=True)
    to = serializers.CharField(allow_null=True)


class BatchSpanSerializer(SpanSerializer):
    days = serializers.ListField(child=serializers.CharField(), help_text="settled site-local days used")


class ImportedSpanSerializer(SpanSerializer):
    days = serializers.ListField(child=serializers.CharField(), help_text="site-local days answered from an import")
    imports = serializers.ListField(child=serializers.CharField(), help_text="the ids of those days' imports")


class SourcesSerializer(serializers.Serializer):
    batch = BatchSpanSerializer(help_text="exact nightly rollups in MongoDB")
    imported = ImportedSpanSerializer(help_text="another product's daily figures, imported (manage.py imports)")
    realtime = SpanSerializer(help_text="minutely counters in Redis")
    missing = SpanSerializer(help_text="older than the realtime window and not rolled up yet")
    watermark = serializers.CharField(allow_null=True, help_text="the latest settled day of the site")
    notes = serializers.ListField(child=serializers.CharField(), help_text="how values were obtained")


class PointSerializer(serializers.Serializer):
    t = serializers.DateTimeField(help_text="bucket start, in the requested time zone")
    value = serializers.FloatField(allow_null=True, help_text="null where no layer holds the value")
    source = serializers.ChoiceField(choices=SOURCES)


class TimeseriesSerializer(serializers.Serializer):
    site_id = serializers.CharField()
    metric = serializers.ChoiceField(choices=METRICS)
    interval = serializers.ChoiceField(choices=("minute", "hour", "day"))
    tz = serializers.CharField()
    points = PointSerializer(many=True)
    sources = SourcesSerializer()


class CurrencyRevenueSerializer(serializers.Serializer):
    currency = serializers.CharField(help_text="ISO 4217 code; each currency is summed apart (no exchange rates)")
    total = serializers.CharField(help_text="the summed amounts, as decimal text (exact, up to 4 places)")
    conversions = serializers.IntegerField(help_text="conversions with revenue in this currency")
    average = serializers.CharField(allow_null=True, help_text="total / those conversions")
    per_visitor = serializers.CharField(allow_null=True, help_text="total / visitors (of the range, or of the value)")


class RevenueSerializer(serializers.Serializer):
    currencies = CurrencyRevenueSerializer(many=True)
    without_revenue = serializers.IntegerField(help_text="conversions whose amount or currency was missing or invalid")


class RowSerializer(serializers.Serializer):
    value = serializers.CharField()
    pageviews = serializers.IntegerField(required=False)
    visitors = serializers.IntegerField(required=False)
    sessions = serializers.IntegerField(required=False, allow_null=True)
    bounce_rate = serializers.FloatField(required=False, allow_null=True)
    visit_duration = serializers.FloatField(required=False, allow_null=True)
    events = serializers.IntegerField(required=False, allow_null=True)
    time_on_page = serializers.FloatField(required=False, allow_null=True, help_text="engaged s per page view")
    scroll_depth = serializers.FloatField(required=False, allow_null=True, help_text="mean deepest scroll, %")
    engaged_time = serializers.FloatField(required=False, allow_null=True, help_text="engaged seconds")
    conversions = serializers.IntegerField(required=False, help_text="with goal: the converting visitors' conversions")
    conversion_rate = serializers.FloatField(
        required=False, allow_null=True, help_text="with goal: converting visitors / visitors attributed to the value"
    )
    revenue = CurrencyRevenueSerializer(many=True, required=False, help_text="with a revenue goal: per currency")


class GoalRefSerializer(serializers.Serializer):
    goal_id = serializers.CharField()
    name = serializers.CharField()


class BreakdownSerializer(RangedSerializer):
    site_id = serializers.CharField()
    goal = GoalRefSerializer(required=False, help_text="with goal: the goal the rows are filtered by")
    metrics = serializers.ListField(
        child=serializers.ChoiceField(choices=tuple(dict.fromkeys((*BREAKDOWN_METRICS, *GOAL_BREAKDOWN_METRICS)))),
        help_text="columns of each row",
    )
    results = RowSerializer(many=True)
    page = serializers.IntegerField()
    limit = serializers.IntegerField()
    total = serializers.IntegerField(help_text="number of distinct values over all pages")
    sources = SourcesSerializer()


class TotalSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True)
    previous = serializers.FloatField(allow_null=True, required=False)
    change = serializers.FloatField(allow_null=True, required=False, help_text="(value - previous) / previous")


class TotalsSerializer(serializers.Serializer):
    pageviews = TotalSerializer()
    visitors = TotalSerializer()
    sessions = TotalSerializer()
    bounce_rate = TotalSerializer()
    visit_duration = TotalSerializer()


class AggregateSerializer(RangedSerializer):
    site_id = serializers.CharField()
    results = TotalsSerializer()
    sources = SourcesSerializer()


class LiveRowSerializer(serializers.Serializer):
    value = serializers.CharField()
    pageviews = serializers.IntegerField()
    visitors = serializers.IntegerField()


class RisingSerializer(serializers.Serializer):
    value = serializers.CharField()
    recent = serializers.IntegerField(help_text="page views in the last 10 minutes")
    baseline_mean = serializers.FloatField(help_text="mean page views per 10 minutes over the 3 hours before")
    z = serializers.FloatField(help_text="how unusual the recent count is against the baseline")


class FlowSerializer(serializers.Serializer):
    referrer = serializers.CharField()
    page = serializers.CharField()
    pageviews = serializers.IntegerField()


class LivePointSerializer(serializers.Serializer):
    t = serializers.DateTimeField()
    value = serializers.IntegerField()


class LiveSourcesSerializer(serializers.Serializer):
    realtime = serializers.DictField(child=serializers.CharField())
    notes = serializers.ListField(child=serializers.CharField())


class RealtimeSerializer(serializers.Serializer):
    site_id = serializers.CharField()
    minutes = serializers.IntegerField()
    now = serializers.DateTimeField()
    concurrent_visitors = serializers.IntegerField(help_text="visitors seen in the last 5 minutes")
    pageviews = serializers.IntegerField()
    visitors = serializers.IntegerField()
    pageviews_per_minute = LivePointSerializer(many=True)
    top_pages = LiveRowSerializer(many=True)
    top_referrers = LiveRowSerializer(many=True)
    rising_pages = RisingSerializer(many=True)
    rising_referrers = RisingSerializer(many=True)
    flows = FlowSerializer(many=True)
    sources = LiveSourcesSerializer()


class GoalSerializer(serializers.Serializer):
    goal_id = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=["page", "event"])
    path = serializers.CharField(allow_blank=True)
    event = serializers.CharField(allow_blank=True)
    prop = serializers.CharField(allow_blank=True)
    value = serializers.CharField(allow_blank=True)
    revenue_prop = serializers.CharField(allow_blank=True)
    currency_prop = serializers.CharField(allow_blank=True)
    currency = serializers.CharField(allow_blank=True)


class GoalResultSerializer(GoalSerializer):
    events = serializers.IntegerField(allow_null=True, help_text="conversions")
    visitors = serializers.IntegerField(allow_null=True, help_text="unique conversions, summed per day")
    conversion_rate = serializers.FloatField(allow_null=True, help_text="visitors / visitors of the range")
    revenue = RevenueSerializer(allow_null=True, help_text="revenue goals: per currency; null for other goals")


class GoalsSerializer(RangedSerializer):
    site_id = serializers.CharField()
    visitors = serializers.IntegerField(allow_null=True, help_text="visitors of the range (the rates' base)")
    results = GoalResultSerializer(many=True)
    sources = SourcesSerializer()


class FunnelStepSerializer(serializers.Serializer):
    goal_id = serializers.CharField()
    name = serializers.CharField()


class FunnelSerializer(serializers.Serializer):
    funnel_id = serializers.CharField()
    name = serializers.CharField()
    window_minutes = serializers.IntegerField()
    strict = serializers.BooleanField()
    steps = FunnelStepSerializer(many=True)


class FunnelListSerializer(serializers.Serializer):
    site_id = serializers.CharField()
    results = FunnelSerializer(many=True)


class EventPropertyRowSerializer(serializers.Serializer):
    value = serializers.CharField()
    events = serializers.IntegerField()
    visitors = serializers.IntegerField()


class EventPropertiesSerializer(RangedSerializer):
    site_id = serializers.CharField()
    event = serializers.CharField()
    property = serializers.CharField()
    results = EventPropertyRowSerializer(many=True)
    page = serializers.IntegerField()
    limit = serializers.IntegerField()
    total = serializers.IntegerField()
    sources = SourcesSerializer()


class FunnelStepResultSerializer(serializers.Serializer):
    goal_id = serializers.CharField()
    name = serializers.CharField()
    visitors = serializers.IntegerField()
    conversion_from_previous = serializers.FloatField(allow_null=True)
    conversion_from_first = serializers.FloatField(allow_null=True)
    median_ms_from_previous = serializers.FloatField(allow_null=True)
    median_estimated = serializers.BooleanField()


class FunnelReportSerializer(RangedSerializer):
    site_id = serializers.CharField()
    funnel_id = serializers.CharField()
    name = serializers.CharField()
    window_minutes = serializers.IntegerField()
    strict = serializers.BooleanField()
    steps = FunnelStepResultSerializer(many=True)
    sources = SourcesSerializer()


class ImportSerializer(serializers.Serializer):
    import_id = serializers.CharField()
    source = serializers.CharField(help_text="the product whose export it was (plausible)")
    files = serializers.ListField(child=serializers.CharField(), help_text="the export's file names")
    first = serializers.DateField(help_text="its first day")
    last = serializers.DateField(help_text="its last day")
    days = serializers.IntegerField(help_text="days with rows")
    rows = serializers.DictField(child=serializers.IntegerField(), help_text="rows read per table")
    created = serializers.DateTimeField()
    state = serializers.ChoiceField(choices=("loading", "complete"))


class ImportListSerializer(serializers.Serializer):
    site_id = serializers.CharField()
    results = ImportSerializer(many=True)
