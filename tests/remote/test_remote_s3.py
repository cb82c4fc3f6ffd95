"""Containers read from an S3-compatible server (moto's standalone server, behind nginx so that
its access log counts the traffic): the same transfers and results as over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.remote import PREFIX_SIZE, Policy
from tests.remote.conftest import BIG_ENTRY, S3, Served

pytestmark = pytest.mark.slow  # moto's S3 server starts in about 40 s: `make check` leaves it out


@pytest.fixture(scope="module")
def big_s3(s3: S3, big: Served) -> Iterator[str]:
    import boto3
    from boto3.s3.transfer import TransferConfig

    # Straight to moto (not through the counting proxy), in 256 MiB parts.
    from botocore.config import Config

    # moto joins the parts of a 3 GiB upload in one request that outlasts botocore's 60 s.
    client = boto3.client("s3", endpoint_url=s3.moto_url, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1",
                          config=Config(read_timeout=1800, retries={"max_attempts": 1}))
    client.upload_file(str(big.path), s3.bucket, "big.nfat",
                       Config=TransferConfig(multipart_chunksize=256 << 20, max_concurrency=2))
    yield f"s3://{s3.bucket}/big.nfat"


# moto answers each range request by reading the whole object (3 GiB): larger ranges keep the
# test's time to a few requests.
MOTO_RANGE = 256 << 20


def s3_env(s3: S3) -> dict[str, str]:
    """The storage options as fsspec reads them from the environment (FSSPEC_S3, JSON)."""
    return {**os.environ, "FSSPEC_S3": json.dumps(s3.options), "FATPTE_REMOTE_RANGE_SIZE": str(MOTO_RANGE)}


def test_info_and_select_transfer_the_prefix_only(s3: S3, big_s3: str, big: Served) -> None:
    mark = s3.nginx.mark(proxy=True)
    done = subprocess.run([sys.executable, "-m", "fatpte", "select", big_s3, "--device", "host"], capture_output=True,
                          text=True, check=False, env=s3_env(s3))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "portable"
    log = s3.nginx.requests(mark, proxy=True)
    # s3fs asks for the object's metadata (HEAD: no body), then the prefix.
    assert [(r.method, r.body_bytes) for r in log] == [("HEAD", 0), ("GET", PREFIX_SIZE)]
    mark = s3.nginx.mark(proxy=True)
    with fatpte.open(big_s3, **s3.options) as c, fatpte.open(big.path) as local:
        assert c.entries == local.entries and c.manifest == local.manifest
    assert sum(r.body_bytes for r in s3.nginx.requests(mark, proxy=True)) == PREFIX_SIZE


def test_extract_of_1_gib_transfers_its_size_and_equals_the_local_extract(s3: S3, big_s3: str, big: Served,
                                                                         tmp_path: Path) -> None:
    mark = s3.nginx.mark(proxy=True)
    done = subprocess.run([sys.executable, "-m", "fatpte", "extract", big_s3, "--name", "big", "-q", "-o",
                           str(tmp_path / "remote.bin")], capture_output=True, text=True, check=False,
                          env=s3_env(s3))
    assert done.returncode == 0, done.stderr
    log = s3.nginx.requests(mark, proxy=True)
    assert sum(r.body_bytes for r in log) == PREFIX_SIZE + BIG_ENTRY  # at most its size + 1%: its size
    assert max(r.body_bytes for r in log) <= MOTO_RANGE
    assert len(log) == 2 + -(-BIG_ENTRY // MOTO_RANGE)  # the metadata (HEAD), the prefix, the ranges
    fatpte.extract(big.path, "big", tmp_path / "local.bin")
    with open(tmp_path / "remote.bin", "rb") as a, open(tmp_path / "local.bin", "rb") as b:
        while True:
            x, y = a.read(8 << 20), b.read(8 << 20)
            assert x == y
            if not x:
                break


def test_thin(s3: S3, big_s3: str, big: Served, tmp_path: Path) -> None:
    with fatpte.open_remote(big_s3, policy=Policy(range_size=MOTO_RANGE), **s3.options) as c:
        from fatpte.ops.thinning import thin_container

        thin_container(c, tmp_path / "remote.nfat", names=["portable"])
    fatpte.thin(big.path, tmp_path / "local.nfat", names=["portable"])
    assert (tmp_path / "remote.nfat").read_bytes() == (tmp_path / "local.nfat").read_bytes()


def test_a_missing_key_and_bad_credentials(s3: S3) -> None:
    with pytest.raises(FatpteError) as info:
        fatpte.open(f"s3://{s3.bucket}/no-such.nfat", **s3.options)
    assert info.value.code is ErrorCode.REMOTE_NOT_FOUND
