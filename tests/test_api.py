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
    for name in ("Specialization", "pte_specialization", "ptn_specialization", "merge_programs", "sign", "verify",
                 "unsign", "load_trusted_keys"):
        found = re.search(rf"`{name}\(([^`]*)\)`", text)
        assert found, f"docs/python-api.md does not write out {name}(...)"
        assert found.group(1) == _written(inspect.signature(getattr(fatpte, name))), name


def test_the_signing_example_of_python_api_md_runs(tmp_path: Any, monkeypatch: Any) -> None:
    """The `## Signing` block of docs/python-api.md, run as written in a folder holding its files."""
    import re

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    from tests.paths import ROOT

    text = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    block = re.search(r"## Signing\n\n```python\n(.*?)```", text, re.DOTALL)
    assert block, "docs/python-api.md has no Signing example"
    private = ed25519.Ed25519PrivateKey.generate()
    (tmp_path / "release.pem").write_bytes(private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    (tmp_path / "release.pub.pem").write_bytes(private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    (tmp_path / "trusted").mkdir()
    monkeypatch.chdir(tmp_path)
    fatpte.pack([fatpte.Specialization("cpu", b"1" * 9), fatpte.Specialization("gpu", b"2")], "model.nfat")
    before = (tmp_path / "model.nfat").read_bytes()
    fatpte.sign("model.nfat", "release.pem")
    fatpte.thin("model.nfat", "orin.nfat", names=["gpu"])  # what the example verifies: a thinned copy
    fatpte.unsign("model.nfat")
    names: dict[str, Any] = {"fatpte": fatpte}
    exec(block.group(1), names)  # noqa: S102  (the documented example)
    report = names["report"]
    assert report.ok and report.key_id == fatpte.load_trusted_keys(["release.pub.pem"])[0].key_id
    assert [(e.name, e.status) for e in report.entries] == [("gpu", "verified")]
    assert report.thinned == ("cpu",)
    assert (tmp_path / "model.nfat").read_bytes() == before  # unsigned again, byte for byte
    assert (tmp_path / "model.nfat.sig").exists()
