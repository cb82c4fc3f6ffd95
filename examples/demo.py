"""`make demo`: a walk through the `fatpte` command line on the bundled sample.

Packs examples/pack.toml (four specializations of one program sharing its weights), validates the
container, lists it, shows which entry this machine and two named devices get and why, thins it
for this machine, and extracts the payload it would run. Each command is printed before it runs.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FATPTE = [sys.executable, "-m", "fatpte"]


def run(*args: str, ok: tuple[int, ...] = (0,)) -> int:
    print(f"\n$ fatpte {' '.join(shlex.quote(a) for a in args)}", flush=True)
    code = subprocess.run([*FATPTE, *args], check=False).returncode
    if code not in ok:
        print(f"demo: `fatpte {args[0]}` exited {code}", file=sys.stderr)
        sys.exit(1)
    return code


def main() -> int:
    out = Path(tempfile.mkdtemp(prefix="fatpte-demo-"))
    container = str(out / "sample.nfat")
    run("pack", "-o", container, "--from", str(HERE / "pack.toml"))
    run("validate", container)
    run("info", container)
    run("select", container, "--device", "host", "--explain")
    run("select", container, "--device", "nvidia-sm80-server")
    run("select", container, "--device", "raspberry-pi-5", "--explain", ok=(0, 3))
    run("thin", container, "--device", "host", "-o", str(out / "host.nfat"))
    run("info", str(out / "host.nfat"))
    run("extract", container, "--device", "host", "-o", str(out / "payload.bin"))
    print(f"\ndemo: outputs are in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
