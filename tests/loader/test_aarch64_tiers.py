"""One container, two architectures (issue 29): each CPU runs the entry its features allow.

The committed tier containers (`tests/fixtures/executorch/<model>_tiers.pack.toml`, mlp and the
stateful kvcache: int8 for aarch64 + asimddp, fp16 for aarch64 + asimdhp, fp32 XNNPACK for aarch64,
fp32 XNNPACK for x86_64 + avx2 + fma, portable last) run natively on this machine and, cross-built,
under `qemu-aarch64 -cpu` cortex-a53 (ARMv8.0), cortex-a76 (fp16 arithmetic and dot product), a64fx
(fp16 and SVE, no dot product) and max,sme=off (everything but SME). No profile is given: each
run probes the CPU it runs on. Two runners (tools/tier_matrix.py does the running):

- `fatpte-run` on the packed container;
- ExecuTorch's own Module runner (et_module_runner) on a fat program (.pte) whose fat delegate
  holds the same entries (`tier_matrix.fat_program`, built here from the committed programs
  without torch), with the CPU kernels, XNNPACK and libexecutorch_backend_fatpte.so loaded.

For each: the entry chosen is the one the requirements say (the `--explain` lines, or the fat
delegate's log, name the features that decided); Python's selection on the profile
`fatpte-run --device-json` prints on that CPU chooses the same entry (and `--explain` is Python's
explanation word for word); the outputs of every call equal the chosen variant's recorded outputs
within that variant's tolerance (fixtures.json "tiers").

Under plain `-cpu max` (SME on) the same entry is chosen, but qemu 7.2 computes SME's int8
outer product wrongly: the outputs check must catch it (an emulator defect, not fatpte's or
ExecuTorch's; docs/executorch.md, "Targeting ARM feature levels").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.loader.aarch64_builds import MATRIX, require

TIERS: dict[str, Any] = json.loads((MATRIX.FIXTURES / "fixtures.json").read_text(encoding="utf-8"))["tiers"]["models"]
MODELS = sorted(TIERS)
NATIVE = MATRIX.NATIVE
EMULATED = ("cortex-a53", "cortex-a76", "a64fx", "max,sme=off")
RUNNERS = MATRIX.RUNNERS
ARM_ENTRIES = ("xnnpack-int8-asimddp", "xnnpack-fp16-asimdhp", "xnnpack-fp32-aarch64")
# What decided on each emulated CPU: the ARM entries its features reject, with the feature missing.
# Every other ARM entry is eligible, and the x86 entry is rejected for its arch.
DECIDED = {
    "cortex-a53": {"xnnpack-int8-asimddp": "asimddp", "xnnpack-fp16-asimdhp": "asimdhp"},
    "cortex-a76": {},
    "a64fx": {"xnnpack-int8-asimddp": "asimddp"},
    "max,sme=off": {},
}
CASES = [(cpu, model, runner) for cpu in (NATIVE, *EMULATED) for model in MODELS for runner in RUNNERS]


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str], Any]:
    """The whole matrix, run once: (cpu, model, runner) -> tier_matrix.Row."""
    require(native=True)
    cpus = [MATRIX.native_cpu(), *(MATRIX.emulated_cpu(c) for c in EMULATED)]
    found = MATRIX.matrix(cpus, MODELS, RUNNERS, tmp_path_factory.mktemp("tiers"))
    return {(r.cpu, r.model, r.runner): r for r in found}


def expected(row: Any) -> str:
    """The entry the requirements say: for an emulated CPU, its model's; natively, this machine's."""
    if row.cpu != NATIVE:
        return str(MATRIX.EXPECTED[row.cpu])
    features = set(row.device["cpu_features"])
    return "xnnpack-fp32-avx2" if {"avx2", "fma"} <= features else "portable"


def entry_line(lines: list[str], prefix: str, entry: str) -> str | None:
    return next((line for line in lines if line.startswith(f"{prefix} {entry} [")), None)


@pytest.mark.parametrize(("cpu", "model", "runner"), CASES)
def test_each_cpu_runs_the_entry_its_features_allow_with_its_variants_outputs(
        rows: dict[tuple[str, str, str], Any], cpu: str, model: str, runner: str) -> None:
    row = rows[(cpu, model, runner)]
    assert row.problems == [], row.problems
    if cpu != NATIVE:
        assert row.device["arch"] == "aarch64"
    assert row.chosen == expected(row)
    assert row.python == row.chosen  # parity: Python on the profile the C++ probe printed
    variant = TIERS[model]["variants"][row.variant]
    assert row.within_reference and row.within_eager
    assert row.error_vs_reference <= variant["tolerance"]["reference"]["rtol"]
    if row.variant != "xnnpack-fp32":  # a lower precision computes another function than the fp32 model
        assert row.error_vs_eager > 1e-5


@pytest.mark.parametrize(("cpu", "model", "runner"), CASES)
def test_the_explanation_names_the_features_that_decided(rows: dict[tuple[str, str, str], Any], cpu: str,
                                                         model: str, runner: str) -> None:
    row = rows[(cpu, model, runner)]
    lines = row.explain
    chosen = expected(row)
    if cpu == NATIVE:
        rejected = {e: "arch: needs one of aarch64; the device has x86_64" for e in ARM_ENTRIES}
    else:
        rejected = {e: f"cpu_features: needs {f}; the device has no {f}" for e, f in DECIDED[cpu].items()}
        rejected["xnnpack-fp32-avx2"] = "arch: needs one of x86_64; the device has aarch64"
    for entry, why in rejected.items():
        line = entry_line(lines, "- ", entry)
        assert line is not None and f"rejected: {why}" in line, (entry, lines)
    for entry in set(ARM_ENTRIES) - set(rejected):  # eligible: no rejection line
        assert entry_line(lines, "- ", entry) is None, (entry, lines)
    if runner == "fatpte-run":
        assert f"chosen: {chosen} [xnnpack]" in lines
        assert entry_line(lines, "#1", chosen) is not None, lines
    else:
        assert f"running entry {chosen} [xnnpack] as a nested program (said once per process)" in lines, lines


@pytest.fixture(scope="module")
def sme_rows(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Any]:
    require()
    found = MATRIX.matrix([MATRIX.emulated_cpu("max")], MODELS, RUNNERS, tmp_path_factory.mktemp("sme"))
    return {(r.model, r.runner): r for r in found}


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("model", MODELS)
def test_emulator_defect_qemu_max_with_sme_computes_int8_wrongly_and_the_outputs_check_catches_it(
        sme_rows: dict[tuple[str, str], Any], rows: dict[tuple[str, str, str], Any], model: str,
        runner: str) -> None:
    # EMULATOR DEFECT (qemu 7.2, Debian 12): under -cpu max, XNNPACK's int8 kernels use SME's
    # SMOPA, which this qemu computes wrongly. Selection is right (the CPU has asimddp) and so is
    # the program: the same binaries under max,sme=off match the reference. What must not happen
    # is that the wrong outputs pass: the outputs check is what tells.
    row = sme_rows[(model, runner)]
    assert "sme" in row.device["cpu_features"]
    assert row.chosen == row.python == "xnnpack-int8-asimddp"
    assert not row.within_reference and not row.within_eager
    assert row.error_vs_reference > 0.5  # 87 to 257% off, measured
    assert any("outputs off their reference" in p for p in row.problems), row.problems
    assert rows[("max,sme=off", model, runner)].within_reference


def test_the_fat_program_holds_the_containers_entries_and_nothing_else(tmp_path: Path) -> None:
    import fatpte
    from fatpte.executorch.pte import read_program
    from fatpte.ops.fat_delegate import nfat_delegates

    for model in MODELS:
        program = read_program(MATRIX.fat_program(model, tmp_path / f"{model}.pte").read_bytes())
        assert program.named_data == ()
        (delegate,) = nfat_delegates(program)
        assert delegate.backend_id == "FatpteBackend"
        packed = MATRIX.tier_container(model, tmp_path)
        inner = fatpte.Container.from_buffer(program.payload(delegate))
        assert fatpte.validate_buffer(program.payload(delegate)).ok
        with fatpte.open(packed) as c:
            assert [(e.name, e.priority) for e in inner.entries] == [(e.name, e.priority) for e in c.entries]
            assert inner.manifest is not None and c.manifest is not None
            for e in c.entries:
                mine, theirs = inner.manifest.entry(e.name), c.manifest.entry(e.name)
                assert mine is not None and theirs is not None
                assert (mine.requires, mine.executorch_backends) == (theirs.requires, theirs.executorch_backends)
                assert mine.named_data == ()  # each nested program carries its own weights
