"""Reads queued once and answered by every Redis shard of the speed layer, merged.

An event's counts, marks and visitors live in the shard of its visitor (see
:mod:`realtime.keys`, Shards), so the shards hold disjoint parts of every counter and
every visitor set: a count over the whole store is the sum of the shards' counts, a
ranking sums each value's scores, and a visitor estimate is the sum of the shards'
HyperLogLog estimates (disjoint sets: no visitor is counted twice, and each part keeps
HyperLogLog's relative error). With one shard, answers pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import redis
from redis.client import Pipeline

Merge = Callable[[list[Any]], Any]


def _number(answers: list[Any]) -> Any:
    present = [a for a in answers if a is not None]
    if not present:
        return None
    total = sum(float(a) for a in present)
    return int(total) if total.is_integer() else total


def _numbers(answers: list[Any]) -> list[Any]:
    return [_number(list(column)) for column in zip(*answers, strict=True)]


def _scores(answers: list[Any]) -> list[tuple[Any, float]]:
    totals: dict[Any, float] = {}
    for answer in answers:
        for member, score in answer:
            totals[member] = totals.get(member, 0.0) + score
    return list(totals.items())


def _largest(answers: list[Any]) -> Any:
    present = [int(a) for a in answers if a is not None]
    return max(present) if present else None


def _least(answers: list[Any]) -> Any:
    return None if any(a is None for a in answers) else min(int(a) for a in answers)


class FanoutPipeline:
    """The read commands the query layer uses, queued on one pipeline per shard; ``execute()``
    runs them (one round trip per shard) and returns one merged answer per command."""

    def __init__(self, clients: Sequence[redis.Redis]) -> None:
        self._pipes: list[Pipeline] = [client.pipeline(transaction=False) for client in clients]
        self._merges: list[Merge] = []

    def _queue(self, merge: Merge, name: str, *args: Any, **kwargs: Any) -> FanoutPipeline:
        for pipe in self._pipes:
            getattr(pipe, name)(*args, **kwargs)
        self._merges.append(merge)
        return self

    def __len__(self) -> int:
        return len(self._merges)

    def pfcount(self, *keys: str) -> FanoutPipeline:
        return self._queue(_number, "pfcount", *keys)

    def hget(self, key: str, field: str) -> FanoutPipeline:
        return self._queue(_number, "hget", key, field)

    def hmget(self, key: str, *fields: str) -> FanoutPipeline:
        return self._queue(_numbers, "hmget", key, *fields)

    def zscore(self, key: str, member: str) -> FanoutPipeline:
        return self._queue(_number, "zscore", key, member)

    def zcount(self, key: str, low: Any, high: Any) -> FanoutPipeline:
        return self._queue(_number, "zcount", key, low, high)

    def zunion(self, keys: Sequence[str], withscores: bool = False) -> FanoutPipeline:
        if not withscores:
            raise ValueError("shards are merged by score: ask for withscores")
        return self._queue(_scores, "zunion", keys, withscores=True)

    def get_largest(self, key: str) -> FanoutPipeline:
        """GET of an integer, the largest over the shards (None if no shard has it)."""
        return self._queue(_largest, "get", key)

    def get_least(self, key: str) -> FanoutPipeline:
        """GET of an integer, the least over the shards (None if a shard lacks it)."""
        return self._queue(_least, "get", key)

    def execute(self) -> list[Any]:
        if len(self._pipes) == 1:
            return self._pipes[0].execute()
        answers = [pipe.execute() for pipe in self._pipes]
        return [merge([shard[i] for shard in answers]) for i, merge in enumerate(self._merges)]
