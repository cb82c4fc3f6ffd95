"""Python started by a test that must import the fatpte PYTHONPATH names (a copy, a zip), not the
checkout the venv's editable install points at: scikit-build-core's editable install
(pyproject.toml) puts a finder first on sys.meta_path that resolves `fatpte` to that checkout
whatever PYTHONPATH says. `WITHOUT_EDITABLE_FINDER` is the code that takes it out, put before
the child's own code (`python -c`)."""

from __future__ import annotations

from typing import Final

WITHOUT_EDITABLE_FINDER: Final = (
    "import sys\n"
    "sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith('_editable_skbc_')]\n"
)
