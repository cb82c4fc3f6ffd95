"""`fatpte extract`: by name or backend id, verified, refusing to overwrite, exact exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import fatpte
from fatpte.cli.main import main


@pytest.fixture
def container(tmp_path: Path) -> Path:
    return fatpte.pack([fatpte.Specialization("portable", b"tiny"),
                        fatpte.Specialization("xnnpack", b"fp32" * 50, name="xnnpack-fp32"),
                        fatpte.Specialization("xnnpack", b"int8" * 20, name="xnnpack-int8")], tmp_path / "c.nfat")


def test_extract_by_name_and_by_backend(container: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.bin"
    result = CliRunner().invoke(main, ["extract", str(container), "--name", "xnnpack-int8", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes() == b"int8" * 20
    assert "'xnnpack-int8'" in result.stdout and "80 bytes" in result.stdout
    out2 = tmp_path / "out2.bin"
    result = CliRunner().invoke(main, ["extract", str(container), "--backend", "portable", "-o", str(out2)])
    assert result.exit_code == 0
    assert out2.read_bytes() == b"tiny"


def test_ambiguous_backend_is_a_usage_error(container: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["extract", str(container), "--backend", "xnnpack", "-o", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "E0705" in result.stderr and "xnnpack-fp32" in result.stderr
    assert not (tmp_path / "o").exists()


def test_unknown_name_lists_what_there_is(container: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["extract", str(container), "--name", "cuda", "-o", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "E0704" in result.stderr and "'portable'" in result.stderr


def test_name_and_backend_together_is_a_usage_error(container: Path, tmp_path: Path) -> None:
    for args in (["--name", "a", "--backend", "b"], []):
        result = CliRunner().invoke(main, ["extract", str(container), *args, "-o", str(tmp_path / "o")])
        assert result.exit_code == 2


def test_corrupt_payload_is_refused_with_no_output(container: Path, tmp_path: Path) -> None:
    data = bytearray(container.read_bytes())
    with fatpte.open(container) as c:
        at = c.entry("portable").offset
    assert data[at] == ord("t")
    data[at] ^= 1
    bad = tmp_path / "bad.nfat"
    bad.write_bytes(bytes(data))
    out = tmp_path / "o.bin"
    result = CliRunner().invoke(main, ["extract", str(bad), "--name", "portable", "-o", str(out)])
    assert result.exit_code == 1
    assert "E0208" in result.stderr
    assert not out.exists()


def test_existing_output_needs_force(container: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.bin"
    out.write_bytes(b"old")
    args = ["extract", str(container), "--name", "portable", "-o", str(out)]
    assert CliRunner().invoke(main, args).exit_code == 2
    assert out.read_bytes() == b"old"
    assert CliRunner().invoke(main, [*args, "--force"]).exit_code == 0
    assert out.read_bytes() == b"tiny"


def test_the_output_cannot_be_the_container_itself(container: Path) -> None:
    before = container.read_bytes()
    result = CliRunner().invoke(main, ["extract", str(container), "--name", "portable", "-f", "-o", str(container)])
    assert result.exit_code == 2
    assert (f"Error: -o {container} is FILE itself: extracting would replace the container with one of its "
            "payloads") in result.stderr
    assert container.read_bytes() == before
