"""Fixtures for the archive on the stack's S3 server (``stack start minio``, by the ``minio`` fixture)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from archive.store import Archive
from footfall.config import Config


@pytest.fixture
def s3_cfg(cfg: Config, minio: str) -> Iterator[Config]:
    """The configuration with a private archive prefix in the stack's bucket (on the S3 server
    of the ``minio`` fixture), removed afterwards."""
    bucket = os.environ.get("FOOTFALL_S3_BUCKET")
    if not bucket or not cfg.archive_s3.endpoint:
        pytest.fail("no S3 bucket or endpoint: run the tests with deploy/local/test.sh", pytrace=False)
    s3 = dataclasses.replace(cfg, archive_url=f"s3://{bucket}/test-{uuid.uuid4().hex[:10]}")
    archive = Archive.from_config(s3)
    # Reachable, with these keys, before the test starts anything.
    archive.fs.get_file_info(pafs.FileSelector(archive.root_path, allow_not_found=True))
    yield s3
    with contextlib.suppress(FileNotFoundError):
        archive.fs.delete_dir(archive.root_path.rsplit("/", 1)[0])


@pytest.fixture
def uploads_in_flight() -> Callable[[], set[str]]:
    """The S3 server's unfinished multipart uploads, from MinIO's own data directory (an
    upload in flight, or one a killed writer left behind, which no listing shows)."""
    multipart = Path(os.environ.get("FOOTFALL_STATE_DIR", "")) / "minio" / ".minio.sys" / "multipart"
    if not multipart.is_dir():
        pytest.fail(f"no MinIO data directory at {multipart.parent.parent}", pytrace=False)

    def uploads() -> set[str]:
        try:
            # multipart/<hash of bucket and object name>/<upload id>
            return {f"{obj.name}/{upload.name}" for obj in os.scandir(multipart) for upload in os.scandir(obj)}
        except FileNotFoundError:  # an upload finished while it was listed
            return uploads()

    return uploads
