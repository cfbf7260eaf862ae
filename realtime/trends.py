"""Trend detection: which pages or referrers are rising now against their own recent past.

Pure. Each value's last ``recent`` minutes are compared with the same-length blocks of its
baseline (the preceding hours): ``z = (recent - mean) / spread``, where the spread is the
blocks' standard deviation, floored by the Poisson spread ``sqrt(mean)`` and by 1, so a
value that was silent and now gets a handful of hits does not outrank a real surge, and a
steady big page does not look "rising" because of ordinary noise. A static threshold would
flag every big page all day and miss a small page tripling.
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
) -> list[Rising]:
    """Rank values by how far their recent hits exceed their baseline.

    ``baseline_blocks[value]`` holds the value's hits per block (missing blocks count as
    0; ``blocks`` is how many blocks the baseline has). Values with fewer than
    ``min_recent`` recent hits, or not above their mean, are not rising.
    """
    ranked = []
    for value, hits in recent.items():
        if hits < min_recent:
            continue
        history = list(baseline_blocks.get(value, ())) + [0] * (blocks - len(baseline_blocks.get(value, ())))
        mean = sum(history) / blocks if blocks else 0.0
        if hits <= mean:
            continue
        variance = sum((h - mean) ** 2 for h in history) / blocks if blocks else 0.0
        spread = max(math.sqrt(variance), math.sqrt(mean), 1.0)
        ranked.append(Rising(value, hits, round(mean, 3), round((hits - mean) / spread, 3)))
    ranked.sort(key=lambda r: (-r.z, -r.recent, r.value))
    return ranked[:limit]
