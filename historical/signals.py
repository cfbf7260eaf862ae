"""What the batch layer announces, so layers above it can act without being imported here."""

from __future__ import annotations

from django.dispatch import Signal

# Sent by :func:`historical.rollups.run_rollup` after a successful rollup, with ``cfg`` (the
# :class:`footfall.config.Config`), ``days`` (the ``(site, day)`` pairs loaded) and ``zones``
# (``{site: time zone}``). A receiver may return ``{"site|day": drift}``; run_rollup reports it.
rollup_finished = Signal()
