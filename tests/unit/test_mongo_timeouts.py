"""The Mongo client's timeouts: the API's reads bound finding a server, connecting and waiting
for an answer in one attempt; batch loads wait without bound and retry; the URL's own options win."""

from __future__ import annotations

import pytest

from historical.store import connect


@pytest.mark.parametrize(
    ("url", "args", "expected"),
    [
        ("mongodb://127.0.0.1:9/", (1000, 5000), (1.0, 1.0, 5.0, False)),
        ("mongodb://127.0.0.1:9/", (1000, None), (1.0, 1.0, None, True)),
        (
            "mongodb://127.0.0.1:9/?socketTimeoutMS=7000&serverSelectionTimeoutMS=300&retryReads=true",
            (1000, 5000),
            (0.3, 1.0, 7.0, True),
        ),
    ],
)
def test_timeouts(url: str, args: tuple[int, int | None], expected: tuple[float, float, float | None, bool]) -> None:
    client, _ = connect(url, "db", *args)
    try:
        pool = client.options.pool_options
        got = (client.options.server_selection_timeout, pool.connect_timeout, pool.socket_timeout,
               client.options.retry_reads)  # fmt: skip
        assert got == expected
    finally:
        client.close()
