"""Trend detection: which pages or referrers are rising now against their own recent past.

Pure. Each value's last ``recent`` minutes are compared with the same-length blocks of its
baseline (the preceding hours): ``z = (recent - mean) / spread``, where the spread is the
blocks' standard deviation, floored by the Poisson spread ``sqrt(mean)`` and by 1, so a
value that was silent and now gets a handful of hits does not outrank a real surge, and a
steady big page does not look "rising" because of ordinary noise. A static threshold would
flag every big page all day and miss a small page tripling.

Blocks in which the whole site had no hit at all (before it was installed, while its
collector or workers were down, counters lost) are not evidence of a quiet past: they are
left out of every value's baseline. With fewer than ``min_baseline_blocks`` blocks of
history nothing is called rising — a freshly started site would otherwise show every page
as a surge.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rising:
    value: str
    recent: int  # hits in the recent window
    baseline_mean: float  # mean hits per window-length block of the baseline
    z: float


def rank_rising(
    recent: Mapping[str, int],
    baseline_blocks: Mapping[str, Sequence[int]],
    blocks: int,
    min_recent: int = 5,
    limit: int = 10,
    min_baseline_blocks: int = 3,
    min_z: float = 2.0,
) -> list[Rising]:
    """Rank values by how far their recent hits exceed their baseline.

    ``baseline_blocks`` holds every value's hits per block (all values of the dimension seen
    in the baseline, not only those in ``recent``; missing trailing blocks count as 0;
    ``blocks`` is how many blocks the baseline has). Only blocks where the site had any hit
    form the baseline, and at least ``min_baseline_blocks`` of them are needed. Values with
    fewer than ``min_recent`` recent hits, or less than ``min_z`` spreads above their mean
    (ordinary noise), are not rising.
    """
    active = active_blocks(baseline_blocks, blocks)
    if len(active) < max(min_baseline_blocks, 1):
        return []
    ranked = []
    for value, hits in recent.items():
        if hits < min_recent:
            continue
        own = baseline_blocks.get(value, ())
        history = [own[i] if i < len(own) else 0 for i in active]
        mean = sum(history) / len(history)
        variance = sum((h - mean) ** 2 for h in history) / len(history)
        spread = max(math.sqrt(variance), math.sqrt(mean), 1.0)
        z = (hits - mean) / spread
        if z < min_z:
            continue
        ranked.append(Rising(value, hits, round(mean, 3), round(z, 3)))
    ranked.sort(key=lambda r: (-r.z, -r.recent, r.value))
    return ranked[:limit]


def active_blocks(baseline_blocks: Mapping[str, Sequence[int]], blocks: int) -> list[int]:
    """The indexes of the baseline's blocks in which the site had any hit (the only ones that
    are evidence of its past; see the module docstring)."""
    site_hits = [0] * blocks
    for history in baseline_blocks.values():
        for i, hits in enumerate(history[:blocks]):
            site_hits[i] += hits
    return [i for i, hits in enumerate(site_hits) if hits > 0]
