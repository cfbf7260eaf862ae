"""What the middleware copies from a tracked request (:class:`Hit`), and the draft made from it.

The request object must not outlive its request, so the request thread copies the few
values an event needs; the draft is built later, on the middleware's background thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from footfall_capture.enrich.addresses import client_address
from footfall_capture.enrich.pipeline import Draft
from footfall_capture.events import new_event_id

MAX_USER_AGENT = 2048  # as the collector's endpoints cut it


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ does more work per hit
class Hit:
    """One tracked request as the request thread saw it; its client address stays in memory."""

    ts: int
    path: str
    url_values: tuple[str | None, ...]  # META values for PageUrls.keys (None: absent)
    referrer: str | None
    user_agent: str | None
    remote_addr: str | None
    forwarded_for: str | None
    dnt: bool  # Do-Not-Track or Global Privacy Control
    method: str | None = None  # "requests" mode only, like status and duration
    status: int | None = None
    duration_ms: float | None = None

    def draft(self, site_id: str, event_type: str, url: str, trusted_proxies: int) -> Draft:
        """The draft of this hit's event, with a fresh event id."""
        draft = Draft(
            site_id=site_id,
            type=event_type,
            ts=self.ts,
            received_at=self.ts,
            event_id=new_event_id(),
            url=url,
            referrer=self.referrer or None,
            method=self.method,
            status=self.status,
            duration_ms=self.duration_ms,
            user_agent=(self.user_agent or "")[:MAX_USER_AGENT],
            dnt=self.dnt,
        )
        draft.set_address(client_address(self.remote_addr, self.forwarded_for, trusted_proxies))
        return draft
