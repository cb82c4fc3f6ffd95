"""Fuzz target: fatpte's ExecuTorch readers over any bytes, as `fatpte info`, `validate` and
`select` run them on a file: `describe` (a .pte, a .ptd, an NPTG or XH00 payload, by bytes 4..8;
a .ptn package, by its zip header), then for a program its signature, the validation of and the choice inside each NFAT delegate, and
the rewrites: the named data taken out (`pack --share-pte-named-data`) and a delegate's segment
replaced (`thin` of a program). Only FatpteError may escape."""

from __future__ import annotations

import _harness

_PROFILE = "raspberry-pi-5"


def test_one_input(data: bytes) -> None:
    from fatpte.device.profile import DeviceProfile
    from fatpte.errors import FatpteError
    from fatpte.executorch import describe, program_signature, read_program, sniff
    from fatpte.executorch.rewrite import remove_named_data, replace_segment
    from fatpte.ops.fat_delegate import select_nfat_delegates, validate_nfat_delegates

    try:
        description = describe(data, source="fuzz")
        description.text()
    except FatpteError:
        return
    if sniff(data) != "pte":
        return
    try:
        program = read_program(data, source="fuzz")
    except FatpteError:
        return
    try:
        program_signature(program)
        for _, report in validate_nfat_delegates(program):
            report.to_json()
        select_nfat_delegates(program, DeviceProfile.load(_PROFILE))
    except FatpteError:
        pass
    try:
        remove_named_data(data, source="fuzz")
    except FatpteError:
        pass
    # What `fatpte thin` does to a program: a delegate's segment replaced by bytes of another length.
    for plan in program.methods:
        for d in plan.delegates:
            if d.location == "segment":
                try:
                    replace_segment(data, d.data_index, b"NFAT" * 3, source="fuzz")
                except FatpteError:
                    pass


if __name__ == "__main__":
    _harness.fuzz(test_one_input)
