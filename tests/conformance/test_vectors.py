"""The conformance vectors of specs/vectors/: committed bytes equal what tools/gen_vectors.py
writes, every vector gets from fatpte exactly the outcome its index states, and every rule of
the container spec has a vector."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import fatpte
from fatpte.device.profile import DeviceProfile
from fatpte.errors import ErrorCode, SelectionError, Severity
from fatpte.format.layout import HEADER_CHECKSUM_OFFSET
from tests.support import vectors as gen_vectors

VECTORS = gen_vectors.VECTORS
INDEX: dict[str, Any] = json.loads((VECTORS / gen_vectors.INDEX).read_text())["vectors"]
FILES = sorted(INDEX)

def _container_rules() -> list[ErrorCode]:
    return [c for c in ErrorCode if 100 <= c.value < 700]


def test_committed_vectors_are_what_the_generator_writes(tmp_path: Path) -> None:
    assert gen_vectors.main(["--out", str(tmp_path)]) == 0
    fresh = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    # receipts/: the C++ writer's line, pinned by its own test (the vectors' README says so).
    committed = sorted(str(p.relative_to(VECTORS)) for p in VECTORS.rglob("*")
                       if p.is_file() and p.relative_to(VECTORS).parts[0] != "receipts")
    assert fresh == committed, "specs/vectors holds other files than the generator writes: run tools/gen_vectors.py"
    for name in fresh:
        assert (tmp_path / name).read_bytes() == (VECTORS / name).read_bytes(), (
            f"{name} differs from what tools/gen_vectors.py writes")


def test_every_container_rule_has_a_vector() -> None:
    errors = {row["error"]["code"] for row in INDEX.values() if not row["valid"]}
    warnings = {w for row in INDEX.values() if row["valid"] for w in row["warnings"]}
    missing = []
    for code in _container_rules():
        if code.tag not in (errors if code.severity is Severity.ERROR else warnings):
            missing.append(f"{code.tag} {code.name}")
    assert not missing, f"rules without a vector: {missing}"


def test_enough_invalid_vectors_each_named_after_one_defect() -> None:
    invalid = [name for name, row in INDEX.items() if not row["valid"]]
    assert len(invalid) >= 60
    assert len(set(invalid)) == len(invalid)


def test_index_lists_exactly_the_files() -> None:
    on_disk = sorted(p.name for p in VECTORS.glob("*" + gen_vectors.SUFFIX))
    assert on_disk == FILES


@pytest.mark.parametrize("name", FILES)
def test_vector(name: str) -> None:
    row = INDEX[name]
    path = VECTORS / name
    data = path.read_bytes()
    assert len(data) == row["size"]
    assert hashlib.sha256(data).hexdigest() == row["sha256"]

    report = fatpte.validate(path)
    first = report.first_error
    in_memory = fatpte.validate_buffer(data)
    assert in_memory.findings == report.findings
    if row["valid"]:
        assert first is None, first.describe() if first else ""
        assert [f.code.tag for f in report.warnings] == row["warnings"]
        with fatpte.open(path) as c:
            assert [e.name for e in c.entries] == row["entries"]
            chosen: dict[str, str | None] = {}
            for device in DeviceProfile.names():
                try:
                    chosen[device] = fatpte.select(c, DeviceProfile.load(device)).chosen.name
                except SelectionError:
                    chosen[device] = None
        assert chosen == row["selection"]
        return
    want = row["error"]
    assert first is not None, f"{name} validates, but the index says {want['code']}"
    assert (first.code.tag, first.code.name, first.offset, first.field) == (
        want["code"], want["name"], want["offset"], want["field"]), first.describe()
    if want["open_raises"]:
        openers: list[Callable[[], object]] = [lambda: fatpte.open(path),
                                                lambda: fatpte.Container.from_buffer(data)]
        for opener in openers:
            with pytest.raises(fatpte.FatpteError) as info:
                opener()
            assert (info.value.code.tag, info.value.offset, info.value.field) == (
                want["code"], want["offset"], want["field"])
    else:
        with fatpte.open(path) as c:
            assert c.entries


SIGNED = [n for n in FILES if "verify" in INDEX[n]]


@pytest.mark.parametrize("name", SIGNED)
def test_signed_vector_verifies_as_the_index_says(name: str) -> None:
    """`fatpte.verify` with the index's trusted keys reports the declared first error (or none)
    and the declared thinned entries (specs/nfat-signature.md section 6)."""
    from fatpte.ops.signing import load_trusted_keys, verify

    want = INDEX[name]["verify"]
    keys = load_trusted_keys([VECTORS / k for k in want["keys"]])
    try:
        report = verify(VECTORS / name, keys)
    except fatpte.FatpteError as exc:
        said = (exc.code.tag, exc.offset, exc.field)
        thinned: list[str] = []
    else:
        first = report.first_error
        said = (None, None, None) if first is None else (first.code.tag, first.offset, first.field)
        thinned = list(report.thinned)
    assert said == (want["code"], want["offset"], want["field"])
    assert thinned == want["thinned"]
    if "unsigned_golden" in want:  # specs/nfat-signature.md section 6.1: reported, not an error
        assert list(report.unsigned_golden) == want["unsigned_golden"]


KEY_FILES: dict[str, Any] = json.loads((VECTORS / gen_vectors.INDEX).read_text())["trusted_key_files"]


@pytest.mark.parametrize("name", sorted(KEY_FILES))
def test_trusted_key_file_is_accepted_or_refused_as_the_index_says(name: str) -> None:
    """specs/nfat-signature.md section 5.4: each *.pub.pem of the vectors is trusted with the
    declared key id (5.2: a compressed point has its key's id), or refused with E0702 at `key`."""
    from fatpte.errors import FatpteError
    from fatpte.ops.signing import load_public_key

    row = KEY_FILES[name]
    if row["accepted"]:
        assert load_public_key(VECTORS / name).key_id == row["key_id"]
    else:
        with pytest.raises(FatpteError) as info:
            load_public_key(VECTORS / name)
        assert (info.value.code.tag, info.value.field) == (row["code"], row["field"])


def test_the_key_files_on_disk_are_the_indexed_ones() -> None:
    assert sorted(p.name for p in VECTORS.glob("*.pem")) == sorted(KEY_FILES)
    assert len({row["key_id"] for row in KEY_FILES.values() if row["accepted"]}) == 2  # compressed: same id


@pytest.mark.parametrize("name", [n for n in SIGNED if "refuse_downgrade" in INDEX[n]["verify"]])
def test_downgrade_check_says_what_the_index_says(name: str) -> None:
    """Section 6 step 11 for the declared device: the vector verifies without the check and is
    refused with it."""
    from fatpte.ops.signing import load_trusted_keys, verify

    want = INDEX[name]["verify"]
    keys = load_trusted_keys([VECTORS / k for k in want["keys"]])
    check = want["refuse_downgrade"]
    first = verify(VECTORS / name, keys, downgrade=DeviceProfile.load(check["device"])).first_error
    said = (None, None, None) if first is None else (first.code.tag, first.offset, first.field)
    assert said == (check["code"], check["offset"], check["field"])


@pytest.mark.parametrize("name", [n for n in SIGNED if "beside" in INDEX[n]["verify"]])
def test_a_signature_beside_a_vector_is_read_only_when_given(name: str) -> None:
    """Section 6 step 1: the verdict does not change because a valid detached signature lies
    beside the file; given, it verifies."""
    from fatpte.ops.signing import load_trusted_keys, verify

    want = INDEX[name]["verify"]
    keys = load_trusted_keys([VECTORS / k for k in want["keys"]])
    beside = VECTORS / want["beside"]
    assert beside.is_file()
    first = verify(VECTORS / name, keys).first_error
    assert first is not None and first.code.tag == want["code"]
    assert verify(VECTORS / name, keys, signature=beside).ok


def test_every_signature_rule_has_a_vector() -> None:
    """Each code of the signature region (12xx) and of verification (13xx) is some vector's
    validation error or verification outcome."""
    said = {row["error"]["code"] for row in INDEX.values() if not row["valid"]}
    said |= {row["verify"]["code"] for row in INDEX.values() if "verify" in row}
    missing = [c.tag for c in ErrorCode if 1200 <= c.value < 1400 and c.tag not in said]
    assert not missing, f"signature rules without a vector: {missing}"


@pytest.mark.parametrize("name", [n for n in FILES if "base" in INDEX[n]])
def test_derived_vector_changes_only_its_declared_bytes(name: str) -> None:
    """A vector made from a valid one differs from it only inside the ranges the index declares
    (its defect and, when re-sealed, header_checksum), or by being cut short."""
    row = INDEX[name]
    base = (VECTORS / row["base"]).read_bytes()
    data = (VECTORS / name).read_bytes()
    assert INDEX[row["base"]]["valid"]
    allowed = [range(a, b) for a, b in row["changed"]]
    diffs = [i for i in range(min(len(base), len(data))) if base[i] != data[i]]
    diffs += list(range(len(base), len(data)))
    stray = [i for i in diffs if not any(i in r for r in allowed)]
    assert not stray, f"bytes {stray[:8]} changed outside the declared ranges {row['changed']}"
    assert diffs or len(data) < len(base), "the vector is identical to its base"
    assert len([r for r in allowed if r.start != HEADER_CHECKSUM_OFFSET]) <= 2


def manifest_rules() -> list[str]:
    """The numbered rules of specs/nfat-manifest.md sections 2.1 to 2.3, as `2.1.5`."""
    import re

    text = (VECTORS.parent / "nfat-manifest.md").read_text(encoding="utf-8")
    rules = []
    for section in ("2.1", "2.2", "2.3"):
        start = text.index(f"\n### {section} ")
        end = text.index("\n### ", start + 1)
        rules += [f"{section}.{n}" for n in re.findall(r"^(\d+)\. ", text[start:end], re.MULTILINE)]
    return rules


# Rules whose vector is too large for specs/vectors: tests/loader/test_cpp_parity.py builds it.
BUILT_IN_TESTS = {"2.1.8"}


def test_every_manifest_rule_has_a_vector() -> None:
    rules = manifest_rules()
    assert len(rules) == 8 + 12 + 1, rules
    covered = {row["rule"] for row in INDEX.values() if "rule" in row}
    assert covered <= set(rules), f"vectors name rules the spec does not have: {covered - set(rules)}"
    missing = [r for r in rules if r not in covered and r not in BUILT_IN_TESTS]
    assert not missing, f"manifest rules without a vector: {missing}"
    for name, row in INDEX.items():
        if "rule" in row:
            assert not row["valid"] and row["error"]["code"] in ("E0405", "E0407", "E0415", "E0418", "E0420"), name
