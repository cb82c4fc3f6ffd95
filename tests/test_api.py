"""The public API of `import fatpte`: lazy, complete, and never shadowed by a submodule."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import types

import fatpte


def test_all_lists_exactly_the_lazy_exports() -> None:
    assert sorted(fatpte.__all__) == sorted(fatpte._EXPORTS)
    assert len(set(fatpte.__all__)) == len(fatpte.__all__)


def test_every_export_resolves_and_no_submodule_hides_one() -> None:
    # Importing every submodule first is what would bind a module over a same-named function.
    for info in pkgutil.walk_packages(fatpte.__path__, "fatpte."):
        if info.name in ("fatpte.__main__",):
            continue
        importlib.import_module(info.name)
    for name in fatpte.__all__:
        value = getattr(fatpte, name)
        assert not isinstance(value, types.ModuleType), f"fatpte.{name} is a module, not the API object"
        assert getattr(value, "__name__", name) == name


def test_import_is_lazy() -> None:
    code = "import sys, fatpte; print(sorted(m for m in sys.modules if m.startswith(('fatpte.', 'construct'))))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"
