"""`fatpte select`, `extract --device`, `thin`, `device`, `coverage`: the targeting verbs over
fatpte.select / fatpte.thin / DeviceProfile, with their JSON and their exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import fatpte
from fatpte.cli.main import main
from fatpte.device.accelerator import Accelerator
from fatpte.device.profile import DeviceProfile

SIG = {"methods": [{"name": "forward", "inputs": [{"dtype": "float32", "shape": [1, 8]}],
                    "outputs": [{"dtype": "float32", "shape": [1, 8]}]}]}


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def container(tmp_path: Path) -> Path:
    weights = b"W" * 4096
    return fatpte.pack([
        fatpte.Specialization("portable", b"portable", priority=-1, signature=SIG, named_data={"w": weights},
                              requires={"arch": ["x86_64"]}),
        fatpte.Specialization("xnnpack", b"avx2" * 64, name="x86_avx2", signature=SIG, named_data=["w"],
                              requires={"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]}),
        fatpte.Specialization("cuda", b"cuda" * 64, name="cuda_sm90", signature=SIG,
                              requires={"accelerators": [{"kind": "cuda", "targets": ["sm_90"]}]}),
    ], tmp_path / "c.nfat")


def profile(tmp_path: Path, name: str, *, arch: str = "x86_64", features: tuple[str, ...] = (),
            cuda: str | None = None) -> Path:
    accs = () if cuda is None else (Accelerator("cuda", "H100", cuda, 80 << 30),)
    p = DeviceProfile(name=name, os="linux", arch=arch, cpu_features=frozenset(features), accelerators=accs,
                      memory_bytes=16 << 30, backends={})
    path = tmp_path / f"{name}.json"
    path.write_text(p.to_json_text())
    return path


@pytest.fixture
def devices(tmp_path: Path) -> dict[str, Path]:
    d = tmp_path / "devices"
    d.mkdir()
    return {
        "v3": profile(d, "v3", features=("sse4_2", "avx", "avx2", "fma")),
        "v2": profile(d, "v2", features=("sse4_2",)),
        "gpu": profile(d, "gpu", features=("sse4_2",), cuda="9.0"),
        "arm": profile(d, "arm", arch="aarch64", features=("asimd",)),
    }


def test_select_prints_the_chosen_name(container: Path, devices: dict[str, Path]) -> None:
    assert run("select", container, "--device", devices["v3"]) == (0, "x86_avx2\n", "")
    assert run("select", container, "--device", devices["v2"])[1] == "portable\n"
    assert run("select", container, "--device", devices["gpu"])[1] == "cuda_sm90\n"
    assert run("select", container, "--device", devices["v3"], "--exclude", "xnnpack")[1] == "portable\n"


def test_select_explain_and_json(container: Path, devices: dict[str, Path]) -> None:
    code, out, _ = run("select", container, "--device", devices["v2"], "--explain")
    assert code == 0
    assert "chosen: portable" in out
    assert "x86_avx2 [xnnpack]: rejected: cpu_features" in out and "no avx2, fma" in out
    code, out, _ = run("select", container, "--device", devices["gpu"], "--json")
    data = json.loads(out)
    assert data["chosen"] == "cuda_sm90" and data["device"] == "gpu"
    by_name = {v["entry"]: v for v in data["verdicts"]}
    assert by_name["cuda_sm90"]["rank"] == 1 and by_name["portable"]["rank"] == 2
    assert by_name["x86_avx2"]["eligible"] is False
    assert by_name["x86_avx2"]["failures"][0]["requirement"] == "cpu_features"


def test_select_when_nothing_fits_exits_3_listing_every_entry_and_requirement(
        container: Path, devices: dict[str, Path]) -> None:
    code, out, err = run("select", container, "--device", devices["arm"], "--explain")
    assert code == 3
    assert out == ""
    assert err.startswith(f"{container}: E0901: no specialization fits device 'arm' (linux aarch64):")
    lines = err.splitlines()
    portable = next(line for line in lines if "portable [portable]" in line)
    avx2 = next(line for line in lines if "x86_avx2 [xnnpack]" in line)
    cuda = next(line for line in lines if "cuda_sm90 [cuda]" in line)
    assert "arch: needs one of x86_64; the device has aarch64" in portable
    assert "arch: needs one of x86_64" in avx2 and "cpu_features: needs avx2, fma" in avx2
    assert "accelerators[0]: needs cuda sm_90" in cuda and "no cuda accelerator" in cuda


def test_select_json_when_nothing_fits_prints_every_verdict_with_chosen_null(
        container: Path, devices: dict[str, Path]) -> None:
    code, out, err = run("select", container, "--device", devices["arm"], "--json", "--prefer", "portable")
    assert code == 3 and "E0901" in err
    data = json.loads(out)
    assert data["chosen"] is None and data["device"] == "arm" and data["prefer"] == ["portable"]
    by_name = {v["entry"]: v for v in data["verdicts"]}
    assert set(by_name) == {"portable", "x86_avx2", "cuda_sm90"}
    assert all(v["eligible"] is False and v["rank"] is None for v in data["verdicts"])
    assert by_name["x86_avx2"]["failures"][0] == {"requirement": "arch", "needed": "one of x86_64",
                                                  "has": "aarch64"}


def test_select_usage_and_profile_errors(container: Path, tmp_path: Path) -> None:
    assert run("select", container)[0] == 2  # --device is required
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x", "os": "plan9"}')
    code, _, err = run("select", container, "--device", bad)
    assert code == 2 and "E0702" in err
    assert run("select", container, "--device", tmp_path / "missing.json")[0] == 4


def test_extract_by_device(container: Path, devices: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "p.bin"
    code, stdout, _ = run("extract", container, "--device", devices["v3"], "-o", out)
    assert code == 0 and "'x86_avx2'" in stdout
    assert out.read_bytes() == b"avx2" * 64
    code, _, err = run("extract", container, "--device", devices["arm"], "-o", tmp_path / "none.bin")
    assert code == 3 and "E0901" in err
    assert not (tmp_path / "none.bin").exists()
    assert run("extract", container, "--name", "x", "--device", devices["v3"], "-o", tmp_path / "o")[0] == 2


def test_thin_keeps_the_chosen_entry_and_its_named_data(container: Path, devices: dict[str, Path],
                                                        tmp_path: Path) -> None:
    out = tmp_path / "thin.nfat"
    code, stdout, _ = run("thin", container, "--device", devices["v3"], "--only-chosen", "-o", out)
    assert code == 0 and "kept 'x86_avx2';" in stdout
    with fatpte.open(out) as c:
        assert [e.name for e in c.entries] == ["x86_avx2"]
        assert bytes(c.named_data("w")) == b"W" * 4096
    assert fatpte.validate(out).ok
    chain = tmp_path / "chain.nfat"  # the chosen entry and the one it falls back to
    code, stdout, _ = run("thin", container, "--device", devices["v3"], "-o", chain)
    assert code == 0 and "kept 'portable', 'x86_avx2';" in stdout
    assert run("thin", container, "--only-chosen", "--name", "portable", "-o", tmp_path / "x.nfat")[0] == 2
    out2 = tmp_path / "named.nfat"
    assert run("thin", container, "--name", "cuda_sm90", "--name", "portable", "-o", out2)[0] == 0
    with fatpte.open(out2) as c:
        assert [e.name for e in c.entries] == ["portable", "cuda_sm90"]
    assert run("thin", container, "-o", tmp_path / "x.nfat")[0] == 2
    assert run("thin", container, "--device", devices["arm"], "-o", tmp_path / "x.nfat")[0] == 3
    assert not (tmp_path / "x.nfat").exists()


def test_device_host_json_is_the_canonical_profile() -> None:
    code, out, _ = run("device", "--json")
    assert code == 0
    assert out == DeviceProfile.host().to_json_text()
    data = json.loads(out)
    identity = ["cpu_cores", "kernel", "os_release", "machine", "soc"]  # those the OS tells, in this order
    assert list(data) == ["name", "os", "arch", "cpu_features", "accelerators", "memory_bytes", "backends",
                          *(k for k in identity if k in data)]
    assert data["name"] == "host"
    code, text, _ = run("device")
    assert code == 0 and text.startswith("name:         host\n")


def test_device_list_and_show(devices: dict[str, Path]) -> None:
    code, out, _ = run("device", "list", "--json")
    assert code == 0
    assert [p["name"] for p in json.loads(out)] == DeviceProfile.names()
    assert all(name in run("device", "list")[1] for name in DeviceProfile.names())
    code, out, _ = run("device", "show", devices["gpu"], "--json")
    assert code == 0 and json.loads(out)["accelerators"][0]["version"] == "9.0"
    code, _, err = run("device", "show", "no-such-device")
    assert code == 2 and "E0702" in err and "x86-64-v3" in err  # names what there is


def test_coverage(container: Path, devices: dict[str, Path], tmp_path: Path) -> None:
    folder = str(devices["v3"].parent)
    code, out, _ = run("coverage", container, "--devices", folder, "--json")
    assert code == 0
    data = json.loads(out)
    rows = {r["device"]: r for r in data["devices"]}
    assert [r["device"] for r in data["devices"]] == ["arm", "gpu", "v2", "v3"]  # sorted file names
    assert rows["v3"]["entry"] == "x86_avx2" and rows["gpu"]["entry"] == "cuda_sm90"
    assert rows["arm"]["entry"] is None and "E0901" not in rows["arm"]["reason"]
    assert "no specialization fits" in rows["arm"]["reason"]
    assert data["uncovered"] == ["arm"] and data["unused_entries"] == []
    thin = tmp_path / "t.nfat"
    fatpte.thin(container, thin, names=["x86_avx2"])
    assert rows["v3"]["download_bytes"] == thin.stat().st_size < data["size"]
    assert rows["arm"]["download_bytes"] is None
    code, out, _ = run("coverage", container, "--devices", f"{devices['v3']},{devices['v2']}")
    assert code == 0 and "x86_avx2" in out and "portable" in out and "cuda_sm90" in out  # chosen by none
    assert run("coverage", container, "--devices", folder, "--strict")[0] == 3


def test_coverage_takes_host_as_select_does(container: Path) -> None:
    code, out, err = run("coverage", container, "--devices", "host,x86-64-v3", "--json")
    assert (code, err) == (0, "")
    assert [r["device"] for r in json.loads(out)["devices"]] == ["host", "x86-64-v3"]


def test_excluded_entries_say_the_caller_excluded_them(container: Path) -> None:
    code, out, _ = run("select", container, "--device", "x86-64-v3", "--exclude", "portable", "--explain")
    assert code in (0, 3)
    assert any(line.endswith(": rejected: excluded by the caller (exclude=portable)") for line in out.splitlines())


def test_coverage_error_paths(container: Path, tmp_path: Path) -> None:
    assert run("coverage", tmp_path / "missing.nfat", "--devices", "x86-64-v3")[0] == 4
    code, _, err = run("coverage", container, "--devices", "no-such-profile")
    assert code == 2 and "E0702" in err


def test_device_show_prints_sizes_for_people() -> None:
    code, out, _ = run("device", "show", "nvidia-sm90-server")
    assert code == 0
    assert out.splitlines()[3:5] == ["accelerators: cuda 9.0 (NVIDIA H100 80GB HBM3, 80.0 GiB)",
                                     "memory:       1.0 TiB"]
    exact = json.loads(run("device", "show", "nvidia-sm90-server", "--json")[1])
    assert exact["memory_bytes"] == 1 << 40 and exact["accelerators"][0]["memory_bytes"] == 80 << 30
