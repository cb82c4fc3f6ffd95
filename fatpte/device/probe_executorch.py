"""The ExecuTorch backends registered in ExecuTorch's Python runtime, when it is installed: what
`fatpte device` reports as the host's `executorch_backends` (specs/device-profile.md section 9).

The runtime is asked in a child interpreter (the same Python, the same environment): importing
it imports torch, seconds of work and a stream of import-time messages that are not fatpte's, and
a runtime that fails to load must not take `fatpte device` with it. Standard library only.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from typing import Final

# The runtime's own answer: executorch.runtime.Runtime's backend registry, the names each
# backend library registered when it was loaded (ExecuTorch's get_backend_name).
_ASK: Final = ("import json\n"
               "from executorch.runtime import Runtime\n"
               "print(json.dumps(sorted(Runtime.get().backend_registry.registered_backend_names)))\n")
TIMEOUT_SECONDS: Final = 300  # a cold import of torch and the runtime takes tens of seconds


def registered_backends() -> tuple[str, ...] | None:
    """The backend ids ExecuTorch's Python runtime has registered, sorted; None when the runtime
    is not installed or cannot be loaded (the profile then leaves the field out: not known)."""
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
        names = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return tuple(sorted(set(names)))
