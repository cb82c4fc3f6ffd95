"""Fixtures of the remote tests: nginx serving a folder (and proxying to moto's S3 server, so
that S3 traffic is counted in an access log too), and the containers they serve. Started once
per session, on 127.0.0.1 on free ports, stopped at the end (tests/remote/servers.py)."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

import fatpte
from fatpte.ops.specialization import Specialization
from tests.remote.servers import MotoServer, Nginx

GIB = 1 << 30
BIG_ENTRY = GIB  # the entry extract streams: "a 1 GiB entry"
HUGE_ENTRY = 2 * GIB + (64 << 20)  # with it the container is past 3 GiB
MARK = 1 << 20  # bytes of random data at each marked place of a sparse payload


def sparse_payload(path: Path, size: int, seed: int) -> Path:
    """A `size`-byte file that is a hole except for random MiBs at its start, every 256 MiB, and
    its end: cheap on disk, yet a range read from the wrong offset gives other bytes."""
    rng = random.Random(seed)
    with open(path, "wb") as f:
        f.truncate(size)
        for at in [*range(0, size - MARK, 256 << 20), size - MARK]:
            f.seek(at)
            f.write(rng.randbytes(MARK))
    return path


class Served(NamedTuple):
    path: Path  # the container on disk
    name: str  # its name in the served folder


@pytest.fixture(scope="session")
def www(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("www")


@pytest.fixture(scope="session")
def big(www: Path, tmp_path_factory: pytest.TempPathFactory) -> Served:
    """A container of 3.1 GiB, sparse on disk: a small portable entry the host gets, a 1 GiB
    entry with two named-data segments, and a 2 GiB entry only a CUDA device gets."""
    work = tmp_path_factory.mktemp("big-payloads")
    path = fatpte.pack([
        Specialization("portable", os.urandom(200_000), priority=-1, named_data=["w.shared"]),
        Specialization("xnnpack", sparse_payload(work / "big.bin", BIG_ENTRY, 1), name="big",
                       requires={"accelerators": [{"kind": "npu"}]}, named_data=["w.shared", "w.big"]),
        Specialization("cuda", sparse_payload(work / "huge.bin", HUGE_ENTRY, 2), name="huge",
                       requires={"accelerators": [{"kind": "cuda", "targets": ["sm_90"]}]}),
    ], www / "big.nfat", named_data={"w.shared": os.urandom(100_000), "w.big": os.urandom(300_000)})
    assert path.stat().st_size > 3 * GIB
    return Served(path, "big.nfat")


@pytest.fixture(scope="session")
def nginx(www: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nginx]:
    server = Nginx(www, tmp_path_factory.mktemp("nginx"))
    yield server
    server.close()


class S3(NamedTuple):
    nginx: Nginx  # the proxy in front of moto, whose access log counts the traffic
    options: dict[str, object]  # storage options for s3fs
    bucket: str
    moto_url: str  # moto itself, for uploads that are not to be counted


@pytest.fixture(scope="session")
def s3(www: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3]:
    work = tmp_path_factory.mktemp("s3")
    moto = MotoServer(work)
    proxy = Nginx(www, work, upstream=moto.port)
    options: dict[str, object] = {"key": "testing", "secret": "testing", "endpoint_url": proxy.proxy_url,
                                  "client_kwargs": {"region_name": "us-east-1"}}
    import boto3

    client = boto3.client("s3", endpoint_url=moto.url, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    client.create_bucket(Bucket="models")
    try:
        yield S3(proxy, options, "models", moto.url)
    finally:
        proxy.close()
        moto.close()
