"""Loading the repository's scripts (tools/, loader/examples/) as modules, for the tests that
check what they generate or call their functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def load_script(relative: str) -> ModuleType:
    """The script at ROOT/`relative` as a module named after its file, loaded once per session
    (registered in sys.modules first: dataclasses look their module up by name)."""
    path = ROOT / relative
    name = path.stem
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def assert_check_mode_flags_stale_output(generator: ModuleType, stale: Path, old: str, new: str) -> None:
    """A generator script's `--check` fails on output made stale by replacing `old` with `new`,
    and passes once the script has rewritten it."""
    text = generator.generate()
    assert old in text
    stale.write_text(text.replace(old, new, 1), encoding="utf-8")
    assert generator.main(["--check", str(stale)]) == 1
    assert generator.main([str(stale)]) == 0
    assert generator.main(["--check", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == text
