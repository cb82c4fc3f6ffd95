"""`make demo`: pack a sample container from the bundled payloads, validate it, list it and
extract one entry, printing each step."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import fatpte

HERE = Path(__file__).resolve().parent


def main() -> int:
    out_dir = Path(tempfile.mkdtemp(prefix="fatpte-demo-"))
    container = out_dir / "sample.nfat"
    specs = [
        fatpte.Specialization("portable", HERE / "payloads" / "portable.bin", priority=-10),
        fatpte.Specialization("xnnpack", HERE / "payloads" / "xnnpack.bin", name="xnnpack-fp32"),
    ]
    fatpte.pack(specs, container)
    print(f"packed {len(specs)} specializations into {container} ({container.stat().st_size} bytes)")

    report = fatpte.validate(container)
    print(f"validated: {'valid' if report.ok else 'INVALID'}, {len(report.findings)} findings")
    for f in report.findings:
        print("  " + f.describe())

    with fatpte.open(container) as c:
        print(f"NFAT version {c.version}, {len(c.entries)} entries:")
        print(f"  {'name':<14} {'backend':<10} {'kind':<5} {'offset':>8} {'size':>8} {'align':>5} {'crc32c':<8} prio")
        for e in c.entries:
            print(f"  {e.name:<14} {e.backend_id:<10} {e.payload_kind_text:<5} {e.offset:>#8x} {e.size:>8} "
                  f"{e.alignment:>5} {e.checksum or 0:08x} {e.priority}")

    dest = fatpte.extract(container, "xnnpack-fp32", out_dir / "xnnpack.bin")
    same = dest.read_bytes() == (HERE / "payloads" / "xnnpack.bin").read_bytes()
    print(f"extracted 'xnnpack-fp32' to {dest}: {'identical to' if same else 'DIFFERS FROM'} the input payload")
    return 0 if report.ok and same else 1


if __name__ == "__main__":
    sys.exit(main())
