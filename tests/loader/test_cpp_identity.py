"""The C++ loader makes of the device-identity vectors (specs/vectors/identity/) what their index
says, as Python does (tests/conformance/test_identity_vectors.py): `fatpte-run --check-profile`
accepts or refuses each profile with the same code and field, and `fatpte-run --select-only` with
each container and profile chooses the same entry, grades each entry alike and names the same
failed requirements; its `--explain` text and `--json` report are Python's, byte for byte (the
grade shown, a note shared by entries said once)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import fatpte
from fatpte.device.profile import DeviceProfile
from fatpte.device.selection import select
from fatpte.errors import SelectionError
from tools import gen_identity_vectors as G

INDEX: dict[str, Any] = json.loads((G.OUT / "index.json").read_text())


def run(exe: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *args], check=False, capture_output=True, text=True, timeout=120)


def test_profiles_are_read_as_the_index_says(exe: Path) -> None:
    names = sorted(INDEX["profiles"])
    proc = run(exe, "--check-profile", *(str(G.OUT / n) for n in names))
    got = proc.stdout.splitlines()
    want = ["OK" if INDEX["profiles"][n]["accepted"] else f"{INDEX['profiles'][n]['code']} "
            f"{INDEX['profiles'][n]['field']}" for n in names]
    assert dict(zip(names, got)) == dict(zip(names, want))


@pytest.mark.parametrize("container", sorted(INDEX["selections"]))
def test_selection_report_is_pythons(exe: Path, container: str) -> None:
    path = G.OUT / container
    for device, want in INDEX["selections"][container].items():
        profile = G.OUT / device
        proc = run(exe, "--select-only", "--json", "--device", str(profile), str(path))
        report = json.loads(proc.stdout)
        got = {"chosen": report["chosen"],
               "verdicts": [{"entry": v["entry"], "eligible": v["eligible"], "grade": v["grade"],
                             "failures": [f["requirement"] for f in v["failures"]]} for v in report["verdicts"]]}
        assert got == want, device
        with fatpte.open(path) as c:
            try:
                chosen = select(c, DeviceProfile.load(str(profile)))
            except SelectionError as exc:
                assert report == exc.report, device
                assert proc.returncode != 0
                continue
        assert report == chosen.to_json(), device
        explained = run(exe, "--select-only", "--explain", "--device", str(profile), str(path))
        assert explained.stdout == chosen.explain() + "\n", device


def test_a_note_entries_share_is_said_once(exe: Path) -> None:
    proc = run(exe, "--select-only", "--explain", "--device", str(G.OUT / "device-raspberry-pi-5.json"),
               str(G.OUT / "shared-note.nfat"))
    lines = proc.stdout.splitlines()
    notes = [line for line in lines if "not checked" in line]
    assert len(notes) == 1, proc.stdout
    assert notes[0].startswith("  note, for entries a76_or_later, pi5, dotprod: ExecuTorch backends not checked")
    assert [line.split(": ", 1)[1] for line in lines if line.startswith("  #")] == [
        "eligible, exact (priority 0, delegates to XnnpackBackend, specificity 3)",
        "eligible, exact (priority 0, delegates to XnnpackBackend, specificity 2)",
        "eligible, compatible (priority 0, delegates to XnnpackBackend, specificity 2)",
        "eligible, fallback (priority 0, portable operators, specificity 0)"]


def test_every_core_of_the_table_reads_alike(exe: Path, tmp_path: Path) -> None:
    """Every core of vocabulary.CORES (the C++ table is a copy): its name accepted under its arch and
    refused under the other, each of its ids refused (written by name), in both readers."""
    from fatpte.errors import FatpteError
    from fatpte.format import vocabulary as V

    cases: list[tuple[Path, str]] = []
    for core in V.CORES:
        other = "x86_64" if core.arch == "aarch64" else "aarch64"
        for arch, word in [(core.arch, core.name), (other, core.name), *((core.arch, i) for i in core.ids)]:
            path = tmp_path / f"case{len(cases)}.json"
            path.write_text(json.dumps({"name": "t", "os": "linux", "arch": arch, "cpu_features": [],
                                        "accelerators": [], "memory_bytes": 0, "backends": {}, "cpu_cores": [word]}))
            try:
                DeviceProfile.load(str(path))
                want = "OK"
            except FatpteError as exc:
                want = f"{exc.code.tag} {exc.field}"
            cases.append((path, want))
    proc = run(exe, "--check-profile", *(str(p) for p, _ in cases))
    assert proc.stdout.splitlines() == [w for _, w in cases]
    assert [w for _, w in cases].count("OK") == len(V.CORES)


@pytest.mark.loader_build("fatpte-run", "backends", sdk=True)
def test_run_report_says_how_the_entry_serving_fits(build: Path, tmp_path: Path) -> None:
    """fatpte-run's run mode reports the grade of the entry it loaded (specs/run-report.md)."""
    from fatpte.device import run_report

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "executorch"
    out = tmp_path / "kv.nfat"
    fatpte.pack([fatpte.Specialization("xnnpack", str(fixtures / "kvpair_xnnpack_default.pte"), name="xnnpack",
                                       requires={"arch": ["x86_64"], "min_core": "nehalem"}),
                 fatpte.Specialization("portable", str(fixtures / "kvpair_portable_default.pte"), name="portable")],
                out)
    profile = tmp_path / "named.json"
    profile.write_text(DeviceProfile("named", "linux", "x86_64", [], cpu_cores=["haswell"]).to_json_text())
    grades = {}
    for device in (profile, tmp_path / "nameless.json"):
        if device.name == "nameless.json":
            device.write_text(DeviceProfile("nameless", "linux", "x86_64", []).to_json_text())
        proc = run(build / "fatpte-run", str(out), "--self-test", "--json", "--device", str(device),
                   "--backend-path", str(build / "backends"))
        report = json.loads(proc.stdout)
        assert run_report.outside(report) is None
        grades[device.name] = (report["chosen"], report["grade"])
    assert grades == {"named.json": ("xnnpack", "exact"), "nameless.json": ("portable", "fallback")}


@pytest.mark.loader_build("fatpte-verify", only="release")
def test_identity_requirements_are_signed(build: Path, tmp_path: Path) -> None:
    """An entry requiring a core has the entry/2 record (specs/nfat-signature.md 4): signed, it
    verifies in both languages, and its min_core changed after signing is refused by both at the
    entry's record, as any other requirement changed."""
    from fatpte.ops.signing import load_trusted_keys, sign, verify
    from tests.support import vectors as V

    out = tmp_path / "signed.nfat"
    fatpte.pack([fatpte.Specialization("xnnpack", b"a" * 64, name="a76", requires={"arch": ["aarch64"],
                                                                                   "min_core": "cortex-a76"}),
                 fatpte.Specialization("portable", b"p" * 64, name="portable")], out)
    sign(out, V.trusted_keys()[0])
    keys = [V.VECTORS / "trusted-ed25519.pub.pem"]

    def both(path: Path) -> tuple[str, str]:
        report = verify(path, load_trusted_keys(keys))
        first = report.first_error
        py = "OK" if first is None else f"{first.code.tag} {first.offset} {first.field}"
        args = [str(build / "fatpte-verify"), str(path), "--trusted-key", str(keys[0])]
        cpp = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False).stdout.splitlines()[0]
        return py, cpp

    assert both(out) == ("OK", "OK")
    edit = V.Edit(V.Vector("signed", out.read_bytes(), ""))
    edit.set_manifest("entries[0].requires.min_core", b"cortex-a53")
    changed = tmp_path / "changed.nfat"
    changed.write_bytes(bytes(edit.buf))
    py, cpp = both(changed)
    assert py == cpp and py.startswith("E1308 ") and py.endswith(" manifest.entries[0]"), (py, cpp)


@pytest.mark.loader_build("fatpte-verify", only="release")
def test_downgrade_check_replays_identity_requirements(build: Path, tmp_path: Path) -> None:
    """The statement's `selection` carries min_core (specs/nfat-signature.md 3.2), so the downgrade
    check (step 11) of a container thinned to its portable entry refuses it for a Cortex-A76, which
    the signed a76 entry would serve, and accepts it for a Cortex-A53, which that entry would not."""
    from fatpte.ops.signing import load_trusted_keys, sign, verify
    from fatpte.ops.thinning import thin
    from tests.support import vectors as V

    out = tmp_path / "signed.nfat"
    fatpte.pack([fatpte.Specialization("xnnpack", b"a" * 64, name="a76", priority=10,
                                       requires={"arch": ["aarch64"], "min_core": "cortex-a76"}),
                 fatpte.Specialization("portable", b"p" * 64, name="portable")], out)
    sign(out, V.trusted_keys()[0])
    thinned = tmp_path / "thinned.nfat"
    thin(out, thinned, names=["portable"])
    keys = [V.VECTORS / "trusted-ed25519.pub.pem"]
    outcomes = {}
    for core in ("cortex-a76", "cortex-a53"):
        device = tmp_path / f"{core}.json"
        profile = DeviceProfile(core, "linux", "aarch64", ["asimd"], cpu_cores=[core])
        device.write_text(profile.to_json_text())
        first = verify(thinned, load_trusted_keys(keys), downgrade=profile).first_error
        args = [str(build / "fatpte-verify"), str(thinned), "--trusted-key", str(keys[0]), "--refuse-downgrade",
                str(device)]
        cpp = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False).stdout.splitlines()[0]
        outcomes[core] = ("OK" if first is None else first.code.tag, cpp.split()[0])
    assert outcomes["cortex-a53"] == ("OK", "OK")
    assert outcomes["cortex-a76"][0] == outcomes["cortex-a76"][1] != "OK"
