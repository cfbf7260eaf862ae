"""The tracker as served: the minified build, at most 2,000 bytes gzipped, with an ETag and
the integrity hash the snippet prints."""

from __future__ import annotations

import base64
import gzip
import hashlib

from django.test import Client

from collector.tracker_file import BUILT, built_tracker

MOST_GZIPPED = 2000  # the budget every tracked page pays


def test_the_served_tracker_is_the_minified_build_under_two_kilobytes(client: Client) -> None:
    resp = client.get("/footfall.js", HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("application/javascript")
    assert resp["Content-Encoding"] == "gzip"
    assert len(resp.content) <= MOST_GZIPPED, f"{len(resp.content)} bytes gzipped"
    body = gzip.decompress(resp.content)
    assert body == BUILT.read_bytes()
    assert b"sendBeacon" in body
    assert b"\n  " not in body
    assert body.startswith(b"/*! Footfall tracker")


def test_plain_clients_get_the_same_bytes_and_a_revalidation_is_a_304(client: Client) -> None:
    plain = client.get("/footfall.js")
    assert "Content-Encoding" not in plain
    assert plain.content == BUILT.read_bytes()
    assert plain["Vary"] == "Accept-Encoding"
    again = client.get("/footfall.js", HTTP_IF_NONE_MATCH=plain["ETag"])
    assert again.status_code == 304
    assert again.content == b""


def test_the_integrity_hash_is_of_the_served_bytes() -> None:
    digest = base64.b64encode(hashlib.sha384(BUILT.read_bytes()).digest()).decode()
    assert built_tracker().integrity == f"sha384-{digest}"
