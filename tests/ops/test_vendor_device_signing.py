"""A signature covers an entry's OpenVINO device and capabilities (manifest revision 4): the entry
record is tagged /2 and ends each accelerator with them (specs/nfat-signature.md section 4), so a
device changed after signing is refused by Python's verify and by fatpte-verify alike (E1308),
while the records of entries without them keep their /1 bytes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

import fatpte
from fatpte.errors import ErrorCode
from fatpte.manifest.canonical import ENTRY_RECORD_TAG, ENTRY_RECORD_TAG_R4, entry_record
from fatpte.ops import signing
from tests.builds import loader_build
from tests.support.vectors import Edit, Vector

S = fatpte.Specialization


def _signed(tmp: Path) -> tuple[Path, Path]:
    src = fatpte.pack([
        S("openvino", os.urandom(200), name="ov-gpu",
          requires={"accelerators": [{"kind": "openvino", "device": "GPU", "capabilities": ["fp16"]}]}),
        S("xnnpack", os.urandom(100), name="cpu", requires={"arch": ["x86_64"]}),
    ], tmp / "m.nfat")
    key = ed25519.Ed25519PrivateKey.generate()
    public = tmp / "k.pub.pem"
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return signing.sign(src, key, tmp / "s.nfat"), public


def _fatpte_verify(path: Path, key: Path) -> str:
    exe = loader_build("release", "fatpte-verify") / "fatpte-verify"
    done = subprocess.run([str(exe), str(path), "--trusted-key", str(key)], capture_output=True, text=True,
                          check=False, timeout=60)
    return done.stdout.splitlines()[0]


def test_records_of_vendor_entries_are_tagged_and_cover_the_device(tmp_path: Path) -> None:
    signed, _ = _signed(tmp_path)
    with fatpte.open(signed) as c:
        assert c.manifest is not None
        ov, cpu = c.manifest.entries
    tag = len(ENTRY_RECORD_TAG).to_bytes(4, "little")  # str(): a u32 length, then the bytes
    assert entry_record(ov).startswith(tag + ENTRY_RECORD_TAG_R4.encode())
    assert entry_record(cpu).startswith(tag + ENTRY_RECORD_TAG.encode())
    acc = ov.requires.accelerators[0]
    changed = {entry_record(ov._replace(requires=ov.requires._replace(accelerators=(a,))))
               for a in (acc._replace(device="NPU"), acc._replace(capabilities=()), acc._replace(device=""),
                         acc._replace(capabilities=("fp16", "int8")))}
    assert len(changed | {entry_record(ov)}) == 5


@pytest.mark.parametrize("field, value", [("entries[0].requires.accelerators[0].device", b"NPU"),
                                          ("entries[0].requires.accelerators[0].capabilities[0]", b"int8")])
def test_a_device_changed_after_signing_is_refused_by_both(tmp_path: Path, field: str, value: bytes) -> None:
    signed, key = _signed(tmp_path)
    trusted = signing.load_trusted_keys([key])
    assert signing.verify(signed, trusted).first_error is None
    assert _fatpte_verify(signed, key) == "OK"
    edit = Edit(Vector("signed", signed.read_bytes(), ""))
    edit.set_manifest(field, value)
    tampered = tmp_path / "tampered.nfat"
    tampered.write_bytes(bytes(edit.buf))
    first = signing.verify(tampered, trusted).first_error
    assert first is not None and first.code is ErrorCode.SIGNED_RECORD_MISMATCH, first
    assert _fatpte_verify(tampered, key) == f"E1308 {first.offset} {first.field}"


def test_the_downgrade_check_replays_the_signed_device(tmp_path: Path) -> None:
    """The statement's `selection` carries the device and capabilities, so step 11 ranks the signed
    entries as the container did: with the GPU entry thinned away, a machine whose OpenVINO lists
    only a CPU would not have got it (no downgrade), a Core Ultra would have (E1308)."""
    signed, key = _signed(tmp_path)
    thinned = fatpte.thin(signed, tmp_path / "t.nfat", names=["cpu"])
    trusted = signing.load_trusted_keys([key])
    exe = loader_build("release", "fatpte-verify") / "fatpte-verify"
    ultra = fatpte.DeviceProfile.load("intel-core-ultra-7-155h")
    cpu_only = ultra._replace(name="ov-cpu", accelerators=ultra.accelerators[:1])
    for profile, refused in ((cpu_only, False), (ultra, True)):
        path = tmp_path / f"{profile.name}.json"
        path.write_text(profile.to_json_text())
        first = signing.verify(thinned, trusted, downgrade=profile).first_error
        assert (first is not None and first.code is ErrorCode.SIGNED_RECORD_MISMATCH) == refused, first
        done = subprocess.run([str(exe), str(thinned), "--trusted-key", str(key), "--refuse-downgrade", str(path)],
                              capture_output=True, text=True, check=False, timeout=60)
        line = done.stdout.splitlines()[0]
        assert line == ("OK" if first is None else f"E1308 {first.offset if first.offset is not None else '-'} "
                        f"{first.field}"), done.stdout + done.stderr
