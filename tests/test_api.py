"""The public API of `import fatpte`: lazy, complete, and never shadowed by a submodule."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import types
from typing import Any

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


def test_an_error_code_prints_as_every_message_does() -> None:
    code = fatpte.ErrorCode(411)
    assert (str(code), f"{code}", code.tag) == ("E0411", "E0411", "E0411")
    assert (int(code), code.value, code.name) == (411, 411, "SIGNATURE_MISMATCH")


def _written(signature: Any) -> str:
    """A signature as the docs write it: names and defaults, `*` before the keyword-only ones."""
    import inspect

    parts: list[str] = []
    for p in signature.parameters.values():
        if p.kind is inspect.Parameter.KEYWORD_ONLY and "*" not in parts:
            parts.append("*")
        parts.append(p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}")
    return ", ".join(parts)


def test_python_api_md_states_the_real_signatures() -> None:
    """docs/python-api.md writes out these calls in full; each must be the real signature."""
    import inspect
    import re

    from tests.paths import ROOT

    text = " ".join((ROOT / "docs" / "python-api.md").read_text(encoding="utf-8").split())
    for name in ("Specialization", "pte_specialization", "ptn_specialization", "merge_programs"):
        found = re.search(rf"`{name}\(([^`]*)\)`", text)
        assert found, f"docs/python-api.md does not write out {name}(...)"
        assert found.group(1) == _written(inspect.signature(getattr(fatpte, name))), name
