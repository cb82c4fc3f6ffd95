"""The library stand-in for the `fatpte` command line, used by the benchmarks for an operation
the CLI cannot run yet: a small script doing what the command does, with the same lazy imports.

    libcli.py pack OUT BACKEND=PATH ...     libcli.py extract CONTAINER NAME DEST
    libcli.py validate CONTAINER            libcli.py info CONTAINER
    libcli.py select CONTAINER              libcli.py import
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    op, args = argv[0], argv[1:]
    import fatpte

    if op == "import":
        return 0
    if op == "pack":
        specs = [fatpte.Specialization(a.split("=", 1)[0], a.split("=", 1)[1]) for a in args[1:]]
        fatpte.pack(specs, args[0])
    elif op == "extract":
        fatpte.extract(args[0], args[1], args[2])
    elif op == "validate":
        report = fatpte.validate(args[0])
        if not report.ok:
            print(report.findings[0], file=sys.stderr)
            return 1
    elif op == "info":
        with fatpte.open(args[0]) as c:
            for e in c.entries:
                print(e.name, e.backend_id, e.offset, e.size)
    elif op == "select":
        from fatpte.device.profile import DeviceProfile

        with fatpte.open(args[0]) as c:
            print(fatpte.select(c, DeviceProfile.host()).chosen.name)  # type: ignore[attr-defined]
    else:
        print(f"unknown operation {op!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
