"""Unpack the ExecuTorch C++ SDK from the `executorch` wheel into a build folder (`make executorch-sdk`).

The wheel carries ExecuTorch's C++ runtime as a prebuilt SDK beside its Python code: the shared
libraries (`executorch/lib/`), their headers (`executorch/include/`), the CMake package
(`executorch/share/cmake/executorch-config.cmake`, which finds the other two relative to itself)
and the program schema (`executorch/schema/*.fbs`, from which the loader generates its reader of
a program's delegates). Only those four folders are taken, so nothing of the Python half (which
would need torch) lands in the build. Usage:

    python tools/unpack_executorch_sdk.py WHEEL DEST

writes DEST/executorch/{lib,include,share,schema}; DEST is replaced as a whole, and only once the
new one is complete (it is unpacked into a temporary folder beside DEST, then renamed into place),
so an interrupted run leaves the SDK that was there, never half of one.
"""

from __future__ import annotations

import shutil
import stat
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

SDK_FOLDERS = ("executorch/lib/", "executorch/include/", "executorch/share/", "executorch/schema/")


def unpack(wheel: Path, dest: Path) -> int:
    """Extract the SDK folders of `wheel` into a new `dest`, replacing it once complete; returns
    the file count."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".partial", dir=dest.parent))
    try:
        count = _extract(wheel, work)
        if dest.exists():
            shutil.rmtree(dest)
        work.rename(dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return count


def _extract(wheel: Path, dest: Path) -> int:
    count = 0
    try:
        zf = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as exc:
        raise SystemExit(f"{wheel}: cannot be read as a wheel ({exc}); delete it and run make again to download it anew")
    with zf:
        for info in zf.infolist():
            name = info.filename
            if info.is_dir() or not name.startswith(SDK_FOLDERS):
                continue
            rel = PurePosixPath(name)
            if rel.is_absolute() or ".." in rel.parts:
                raise SystemExit(f"{wheel}: refusing the member {name!r} (outside the SDK folders)")
            target = dest.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                target.chmod(mode | stat.S_IRUSR | stat.S_IWUSR)
            count += 1
    if not (dest / "executorch" / "share" / "cmake" / "executorch-config.cmake").is_file():
        raise SystemExit(f"{wheel}: no executorch/share/cmake/executorch-config.cmake: not an ExecuTorch SDK wheel")
    return count


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: unpack_executorch_sdk.py WHEEL DEST", file=sys.stderr)
        return 2
    count = unpack(Path(argv[1]), Path(argv[2]))
    print(f"unpacked {count} files of {Path(argv[1]).name} into {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
