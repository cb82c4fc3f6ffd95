"""Command lines for each operation: the installed `fatpte` CLI when it can run the operation,
else bench/libcli.py (the library, in a fresh process). Which one ran is printed in the report.

The CLI's argument shapes are probed once per operation from a short list of forms and checked
by their effect (exit 0 and the expected output), so the bench keeps working while the CLI grows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness import PYTHON, ROOT, run_cmd

FATPTE = str(ROOT / ".venv" / "bin" / "fatpte")
LIBCLI = str(ROOT / "bench" / "libcli.py")


def cli_available() -> bool:
    if not (ROOT / "fatpte" / "cli" / "main.py").exists() or not Path(FATPTE).exists():
        return False
    try:
        run_cmd([FATPTE, "--help"])
    except (RuntimeError, OSError):
        return False
    return True


def _works(argv: Sequence[str], check: Callable[[], bool]) -> bool:
    try:
        run_cmd(argv)
    except (RuntimeError, OSError):
        return False
    return check()


@dataclass
class Commands:
    """Resolves each operation to a command line once, remembering which tool runs it."""

    via: dict[str, str] = field(default_factory=dict)
    _chosen: dict[str, int] = field(default_factory=dict)
    _cli: bool | None = None

    def _has_cli(self) -> bool:
        if self._cli is None:
            self._cli = cli_available()
        return self._cli

    def _pick(self, op: str, forms: list[list[str]], lib: list[str], check: Callable[[], bool]) -> list[str]:
        if op in self._chosen:
            return [FATPTE, *forms[self._chosen[op]]]
        if self.via.get(op) == "library":
            return [PYTHON, LIBCLI, *lib]
        if self._has_cli():
            for i, form in enumerate(forms):
                argv = [FATPTE, *form]
                if _works(argv, check):
                    self._chosen[op] = i
                    self.via[op] = "CLI"
                    return argv
        self.via[op] = "library"
        return [PYTHON, LIBCLI, *lib]

    def pack(self, out: Path, payloads: Sequence[tuple[str, Path]]) -> list[str]:
        pairs = [f"{b}={p}" for b, p in payloads]
        forms = [["pack", "-q", "-o", str(out), *pairs], ["pack", "-o", str(out), *pairs]]

        def check() -> bool:
            ok = out.exists()
            out.unlink(missing_ok=True)
            return ok

        return self._pick("pack", forms, ["pack", str(out), *pairs], check)

    def extract(self, container: Path, name: str, dest: Path) -> list[str]:
        c, d = str(container), str(dest)
        forms = [["extract", c, "--name", name, "-q", "-o", d], ["extract", c, "--name", name, "-o", d]]

        def check() -> bool:
            ok = dest.exists()
            dest.unlink(missing_ok=True)
            return ok

        return self._pick("extract", forms, ["extract", c, name, d], check)

    def simple(self, op: str, container: Path) -> list[str]:
        """validate, info or select (host device)."""
        c = str(container)
        forms = {"validate": [["validate", "-q", c], ["validate", c]],
                 "select": [["select", c, "--device", "host"], ["select", c]]}.get(op, [[op, c]])
        return self._pick(op, forms, [op, c], lambda: True)

    def import_only(self) -> list[str]:
        return [PYTHON, "-c", "import fatpte"]
