"""Public collection endpoints: ``POST /collect``, ``GET /p.gif``, ``GET /footfall.js``,
and, with an API key of scope ``ingest``, the batch ``POST /api/v1/sites/<site_id>/events``
and the site's salts ``GET /api/v1/sites/<site_id>/salts``.

Answers: 202 accepted (queued to Kafka or durably spooled; or ignored by policy, e.g.
Do-Not-Track), 400 malformed (with a reason code), 401/404 bad key, 403 unknown site,
origin not allowed, or a page URL off the site's listed domains (``page_host_not_allowed``),
413 body over 64 KiB (refused before reading it), 415 a batch in an encoding other than
gzip, 429 flooding client (with Retry-After), 503 when the event can neither be queued nor
spooled.
"""

from __future__ import annotations

import json
import logging
import math
import time
import zlib

import msgspec
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from collector import sightings
from collector.beacon import (
    MAX_BODY_BYTES,
    BadBeacon,
    Beacon,
    meta_asks_not_to_track,
    parse_batch,
    parse_json,
    parse_query,
)
from collector.ingest import Rejected, RequestFacts
from collector.runtime import get_ingestor
from collector.tracker_file import TrackerNotBuilt, built_tracker
from footfall.config import footfall_config
from footfall.models import ANY_HOST_SCOPE, ApiKey
from footfall_capture.accept import Accepted
from footfall_capture.enrich.addresses import client_ip

log = logging.getLogger(__name__)
MAX_BATCH = 1000
MAX_BATCH_BYTES = 4 * 1024 * 1024
MAX_SKEW_AHEAD_MS = 5 * 60 * 1000
# The smallest transparent GIF (43 bytes).
PIXEL = bytes.fromhex("47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _json(data: object, status: int = 200) -> HttpResponse:
    """A JSON answer, like Django's JsonResponse but encoded by msgspec: beacons are hot."""
    try:
        body = msgspec.json.encode(data)
    except UnicodeEncodeError:  # a lone surrogate in an error detail: json escapes it, msgspec cannot
        body = json.dumps(data).encode()
    return HttpResponse(body, content_type="application/json", status=status)


def _error(status: int, reason: str, detail: str = "", retry_after: float | None = None) -> HttpResponse:
    resp = _json({"error": reason, "detail": detail}, status=status)
    if retry_after is not None:
        resp["Retry-After"] = str(max(1, math.ceil(retry_after)))
    return resp


def _cors(request: HttpRequest, resp: HttpResponse) -> HttpResponse:
    """Beacons carry no credentials, so any page may read the answer; the site's allowed
    origins are enforced on the request itself (403), not through CORS. Only an origin a
    browser could have sent (printable ASCII) is echoed: anything else, e.g. a CR from a raw
    client, is not a header value Django may write (it raised, a 500), and no page has it."""
    origin = request.META.get("HTTP_ORIGIN")  # not request.headers: it copies every header on first use
    if origin:
        if origin.isascii() and origin.isprintable():
            resp["Access-Control-Allow-Origin"] = origin
        resp["Vary"] = "Origin"
    resp["Cache-Control"] = "no-store"
    return resp


def _facts(request: HttpRequest) -> RequestFacts:
    meta = request.META  # not request.headers: it copies every header on first use
    cfg = footfall_config()
    ip = client_ip(
        meta.get("REMOTE_ADDR"), meta.get("HTTP_X_FORWARDED_FOR"), cfg.trusted_proxies, cfg.forwarding_proxies
    )
    return RequestFacts(
        ip=ip,
        user_agent=meta.get("HTTP_USER_AGENT", "")[:2048],
        dnt=meta_asks_not_to_track(meta),
        origin=meta.get("HTTP_ORIGIN"),
    )


def _read_body(request: HttpRequest, limit: int) -> bytes:
    """The body, refusing (413) anything over ``limit`` without buffering it."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise Rejected(400, "bad_content_length", "Content-Length is not a number") from None
    if declared > limit:
        raise Rejected(413, "body_too_large", f"{declared} bytes, at most {limit}")
    body = request.read(limit + 1)
    if len(body) > limit:
        raise Rejected(413, "body_too_large", f"more than {limit} bytes")
    return body


def _batch_body(request: HttpRequest) -> bytes:
    """A batch's JSON: the body as sent, or inflated from gzip (``Content-Encoding: gzip``);
    at most :data:`MAX_BATCH_BYTES` either way.

    zlib rather than :func:`gzip.decompress`, which inflates everything it is given: a few
    kilobytes of zeros would become gigabytes. Here inflating stops at the bound."""
    body = _read_body(request, MAX_BATCH_BYTES)
    encoding = request.META.get("HTTP_CONTENT_ENCODING", "").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise Rejected(415, "unsupported_content_encoding", f"{encoding!r}: send gzip or no encoding")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # 16+: gzip's header and trailer
    try:
        data = inflater.decompress(body, MAX_BATCH_BYTES + 1)
    except zlib.error as exc:
        raise Rejected(400, "bad_gzip", f"the body is not gzip: {exc}") from None
    if len(data) > MAX_BATCH_BYTES:
        raise Rejected(413, "body_too_large", f"more than {MAX_BATCH_BYTES} bytes once inflated")
    if not inflater.eof:
        raise Rejected(400, "bad_gzip", "the gzip stream ends early")
    return data


def _taken(site_id: str, source: str, url: str | None, result: Accepted) -> None:
    """Records an answered event for the site's installation check: seen, or dropped and why."""
    record = get_ingestor().sightings
    if result.status == "ignored":
        record.refused(site_id, source, result.reason or "ignored", "taken, then dropped", url)
    else:
        record.seen(site_id, source, url)


def _refused(site_id: str | None, source: str, url: str | None, exc: BadBeacon | Rejected) -> None:
    """Records a refused event for the installation check of the site it named (if it named one)."""
    if site_id is not None:
        get_ingestor().sightings.refused(site_id, source, exc.reason, exc.detail, url)


def _accept(request: HttpRequest, beacon: Beacon, facts: RequestFacts) -> Accepted:
    ingestor = get_ingestor()
    site = ingestor.site(beacon.site_id, facts.origin)
    ingestor.check_rate(facts)
    return ingestor.ingest(beacon, facts, _now_ms(), site=site)


def _accepted_body(result: Accepted) -> dict[str, object]:
    body: dict[str, object] = {"status": result.status, "event_id": result.event_id}
    if result.reason:
        body["reason"] = result.reason
    return body


@csrf_exempt
@require_http_methods(["POST", "OPTIONS"])
def collect(request: HttpRequest) -> HttpResponse:
    """One event as JSON (``application/json`` or ``text/plain`` from sendBeacon)."""
    if request.method == "OPTIONS":
        resp = HttpResponse(status=204)
        resp["Access-Control-Allow-Methods"] = "POST, OPTIONS"
        resp["Access-Control-Allow-Headers"] = "Content-Type"
        resp["Access-Control-Max-Age"] = "86400"
        return _cors(request, resp)
    beacon = None
    try:
        facts = _facts(request)
        beacon = parse_json(_read_body(request, MAX_BODY_BYTES))
        result = _accept(request, beacon, facts)
    except BadBeacon as exc:
        _refused(beacon and beacon.site_id, sightings.TRACKER, beacon and beacon.url, exc)
        return _cors(request, _error(400, exc.reason, exc.detail))
    except Rejected as exc:
        _refused(beacon and beacon.site_id, sightings.TRACKER, beacon and beacon.url, exc)
        return _cors(request, _error(exc.status, exc.reason, exc.detail, exc.retry_after))
    _taken(beacon.site_id, sightings.TRACKER, beacon.url, result)
    return _cors(request, _json(_accepted_body(result), status=202))


@csrf_exempt
@require_http_methods(["GET"])
def pixel(request: HttpRequest) -> HttpResponse:
    """One event from query parameters, answered with a transparent GIF."""
    beacon = None
    try:
        facts = _facts(request)
        beacon = parse_query(request.GET)
        result = _accept(request, beacon, facts)
    except BadBeacon as exc:
        _refused(beacon and beacon.site_id, sightings.PIXEL, beacon and beacon.url, exc)
        return _cors(request, _error(400, exc.reason, exc.detail))
    except Rejected as exc:
        _refused(beacon and beacon.site_id, sightings.PIXEL, beacon and beacon.url, exc)
        return _cors(request, _error(exc.status, exc.reason, exc.detail, exc.retry_after))
    _taken(beacon.site_id, sightings.PIXEL, beacon.url, result)
    resp = HttpResponse(PIXEL, content_type="image/gif", status=202)
    resp["X-Footfall-Status"] = result.status
    return _cors(request, resp)


@require_http_methods(["GET", "HEAD"])
def tracker(request: HttpRequest) -> HttpResponse:
    """The minified browser tracker, gzipped when the client accepts it, cacheable for an hour
    and revalidated by its ETag."""
    try:
        built = built_tracker()
    except TrackerNotBuilt as exc:
        log.error("%s", exc)
        return _error(503, "tracker_not_built", "the server's tracker was not built; see its log")
    if request.META.get("HTTP_IF_NONE_MATCH") == built.etag:
        resp = HttpResponse(status=304)
    elif "gzip" in request.META.get("HTTP_ACCEPT_ENCODING", ""):
        resp = HttpResponse(built.gzipped, content_type="application/javascript; charset=utf-8")
        resp["Content-Encoding"] = "gzip"
    else:
        resp = HttpResponse(built.body, content_type="application/javascript; charset=utf-8")
    resp["ETag"] = built.etag
    resp["Vary"] = "Accept-Encoding"
    resp["Cache-Control"] = "public, max-age=3600"
    resp["Access-Control-Allow-Origin"] = "*"  # cross-origin pages load it with integrity= (CORS)
    return resp


def _bearer_key(request: HttpRequest, site_id: str, scope: str) -> ApiKey:
    """The live key of ``site_id`` with ``scope`` sent as ``Authorization: Bearer``, or :class:`Rejected`."""
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer "):
        raise Rejected(401, "missing_api_key", "send Authorization: Bearer <api key>")
    key = ApiKey.authenticate(header.removeprefix("Bearer ").strip())
    if key is None:
        raise Rejected(401, "invalid_api_key", "unknown, malformed, revoked or expired API key")
    if key.site_id != site_id:
        raise Rejected(404, "unknown_site", f"no site {site_id!r} for this key")
    if scope not in key.scopes:
        raise Rejected(403, "missing_scope", f"this key lacks the {scope!r} scope")
    return key


@csrf_exempt
@require_http_methods(["POST"])
def ingest_batch(request: HttpRequest, site_id: str) -> HttpResponse:
    """Up to 1,000 server-side events for ``site_id``, with event times honoured inside
    the configured window. Each event is accepted or rejected on its own; the answer is
    202 with per-event results, unless the request as a whole is refused."""
    try:
        key = _bearer_key(request, site_id, "ingest")
        any_host = ANY_HOST_SCOPE in key.scopes
        ingestor = get_ingestor()
        site = ingestor.site(site_id)
        items = parse_batch(_batch_body(request), MAX_BATCH)
    except BadBeacon as exc:
        return _error(400, exc.reason, exc.detail)
    except Rejected as exc:
        return _error(exc.status, exc.reason, exc.detail, exc.retry_after)
    cfg = footfall_config()
    now = _now_ms()
    results: list[dict[str, object]] = []
    # footfall_capture's HTTP sink names itself: a host site's middleware, not a backend's own events.
    from_host = request.META.get("HTTP_USER_AGENT", "").startswith("footfall-capture")
    source = sightings.MIDDLEWARE if from_host else sightings.BATCH_API
    for index, item in enumerate(items):
        try:
            if isinstance(item, BadBeacon):
                raise item
            if item.site_id != site_id:
                raise BadBeacon("site_mismatch", f"event for {item.site_id!r} sent to {site_id!r}")
            facts = RequestFacts(ip=item.ip, user_agent=item.user_agent or "", dnt=False)
            window = (cfg.ingest_max_age_ms, MAX_SKEW_AHEAD_MS)
            # A server's own event may have no page (a signup recorded by the backend).
            result = ingestor.ingest(
                item, facts, now, ts_window=window, site=site, any_host=any_host, url_required=False
            )
            results.append({"index": index, **_accepted_body(result)})
            _taken(site_id, source, item.url, result)
        except BadBeacon as exc:
            _refused(site_id, source, None if isinstance(item, BadBeacon) else item.url, exc)
            results.append({"index": index, "status": "rejected", "error": exc.reason, "detail": exc.detail})
        except Rejected as exc:
            _refused(site_id, source, None if isinstance(item, BadBeacon) else item.url, exc)
            if exc.status == 503:  # stop: later events would fail the same way
                return _error(503, exc.reason, f"{exc.detail}; {index} events accepted before this one")
            results.append({"index": index, "status": "rejected", "error": exc.reason, "detail": exc.detail})
    accepted = sum(1 for r in results if r["status"] in {"queued", "spooled", "ignored"})
    return _json({"accepted": accepted, "rejected": len(results) - accepted, "results": results}, status=202)


@require_http_methods(["GET"])
def site_salts(request: HttpRequest, site_id: str) -> HttpResponse:
    """The site's salts of yesterday, today and tomorrow (its salt policy's days), for a sender
    that computes its visitors' ids itself (a host site's HTTP transport): a key of scope
    ``ingest`` of that site only, and salts that make that site's ids and no other's."""
    try:
        _bearer_key(request, site_id, "ingest")
        ingestor = get_ingestor()
        site = ingestor.site(site_id)
        salts = ingestor.site_salts(site, _now_ms())
    except Rejected as exc:
        return _error(exc.status, exc.reason, exc.detail, exc.retry_after)
    body = {
        "site_id": site.site_id,
        "policy": site.salt_policy,
        "timezone": site.timezone,
        "salts": [{"day": day, "salt": salt.hex()} for day, salt in salts.items()],
    }
    resp = _json(body)
    resp["Cache-Control"] = "no-store"  # secrets: no proxy or browser may keep them
    return resp
