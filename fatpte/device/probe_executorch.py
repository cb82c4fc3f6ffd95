"""The ExecuTorch backends this machine's ExecuTorch runtime provides: what `fatpte device` and
`--device host` report as the host's `executorch_backends` (specs/device-profile.md section 9).

Two runtimes can answer, asked in a child process each (standard library only):

- the C++ runtime of the ExecuTorch SDK, through fatpte's loader: `fatpte-run --device-json
  --with-executorch` loads every backend library of its backend path and lists the backends its
  registry has registered and available. Which fatpte-run, and how it is run: the one room that
  finds and drives it, fatpte.device.fatpte_run. It starts in milliseconds and needs no torch, so
  `--device host` asks it.
- ExecuTorch's Python runtime, when it is installed: importing it imports torch, seconds of work
  and a stream of import-time messages that are not fatpte's, so only `fatpte device` asks it,
  and only when no fatpte-run answered.

Only `sys` is imported up front: `--device host` on a machine with no fatpte-run pays
for a look along PATH, not for the subprocess machinery.

A runtime that fails to answer must not take the command with it: the answer is then "not
known" (the key left out), except for a fatpte-run named by `$FATPTE_RUN`, whose failure is an
error naming it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Final

from fatpte.device.fatpte_run import RUNTIME_ENV, RUNTIME_NAME, call, find_runtime
from fatpte.errors import ErrorCode, FatpteError, printable

if TYPE_CHECKING:
    from collections.abc import Mapping

RUNTIME_TIMEOUT_SECONDS: Final = 60  # loading the backend libraries takes milliseconds

# The runtime's own answer: executorch.runtime.Runtime's backend registry, the names each
# backend library registered when it was loaded (ExecuTorch's get_backend_name).
_ASK: Final = ("import json\n"
               "from executorch.runtime import Runtime\n"
               "print(json.dumps(sorted(Runtime.get().backend_registry.registered_backend_names)))\n")
TIMEOUT_SECONDS: Final = 300  # a cold import of torch and the runtime takes tens of seconds


def _names(value: object) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        return None
    return tuple(sorted(set(value)))


def registered_backends() -> tuple[str, ...] | None:
    """The backend ids ExecuTorch's Python runtime has registered, sorted; None when the runtime
    is not installed or cannot be loaded (the profile then leaves the field out: not known)."""
    import importlib.util
    import json
    import subprocess

    if importlib.util.find_spec("executorch") is None:
        return None
    try:
        done = subprocess.run([sys.executable, "-c", _ASK], capture_output=True, text=True,
                              timeout=TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        return _names(json.loads(done.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return None


def runtime_backends(vendor_runtimes: Mapping[str, str] | None = None) -> tuple[str, ...] | None:
    """The backend ids the C++ ExecuTorch runtime of `find_runtime()`'s fatpte-run provides,
    sorted; None when there is none to ask, or one found on PATH or beside Python does not answer.
    `vendor_runtimes` reach it as `--vendor-runtime NAME=PATH` (a backend whose runtime is
    withheld is not loaded).
    FatpteError when the one `$FATPTE_RUN` names cannot be run (E0801) or does not answer (E0702)."""
    path, named = find_runtime()
    if path is None:
        return None
    import json
    import subprocess

    where = f"{RUNTIME_ENV}={path}" if named else path

    def refuse(why: str) -> FatpteError | None:
        return FatpteError(ErrorCode.INVALID_ARGUMENT, f"{where} does not say which ExecuTorch backends its runtime "
                           f"has: {why}", source=path, field=RUNTIME_ENV) if named else None

    try:
        vendor = [word for name, lib in sorted((vendor_runtimes or {}).items())
                  for word in ("--vendor-runtime", f"{name}={lib}")]
        done = call([path, "--device-json", "--with-executorch", *vendor], RUNTIME_TIMEOUT_SECONDS)
    except OSError as exc:
        if named:
            raise FatpteError(ErrorCode.IO_ERROR, f"cannot run {where}: {exc.strerror or exc}", source=path,
                              field=RUNTIME_ENV) from None
        return None
    except subprocess.SubprocessError:
        problem = refuse(f"it did not answer within {RUNTIME_TIMEOUT_SECONDS} s")
        if problem is not None:
            raise problem from None
        return None
    if done.returncode != 0:
        said = printable(done.stderr.strip().splitlines()[0][:300]) if done.stderr.strip() else "no message"
        problem = refuse(f"`{RUNTIME_NAME} --device-json --with-executorch` exited {done.returncode} ({said}); "
                         "a fatpte-run built with the ExecuTorch SDK answers it")
    else:
        try:
            names = _names(json.loads(done.stdout).get("executorch_backends"))
        except (ValueError, AttributeError):
            names = None
        if names is not None:
            return names
        problem = refuse("its answer is not a device profile with executorch_backends")
    if problem is not None:
        raise problem
    return None
