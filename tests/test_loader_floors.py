"""The C++ loader's floors (loader/layers.toml) hold, and tools/check_includes.py, which `make lint`
runs, fails naming the file, the line and both floors when an #include runs up a floor or across
to a sibling, when a header is in no floor, and when files include each other."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from tests.paths import ROOT

LOADER = ROOT / "loader"
TOOL = ROOT / "tools" / "check_includes.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_includes", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_includes"] = module
    spec.loader.exec_module(module)
    return module


def _copy(tmp_path: Path) -> Path:
    out = tmp_path / "loader"
    shutil.copytree(LOADER / "src", out / "src")
    shutil.copytree(LOADER / "include", out / "include")
    shutil.copy(LOADER / "layers.toml", out / "layers.toml")
    return out


def _add_include(file: Path, header: str) -> None:
    text = file.read_text(encoding="utf-8")
    first = text.index("#include")
    file.write_text(text[:first] + f'#include "{header}"\n' + text[first:], encoding="utf-8")


def test_the_floors_hold() -> None:
    done = subprocess.run([sys.executable, str(TOOL)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout
    assert done.stdout.strip().endswith("loader floors: kept")


def test_every_source_folder_is_a_floor_and_none_is_a_crowd() -> None:
    floors = _tool().Floors.read(LOADER / "layers.toml")
    folders = [p for p in (LOADER / "src").iterdir() if p.is_dir()]
    assert {p.name for p in folders} <= set(floors.rank)
    assert not [p for p in (LOADER / "src").iterdir() if p.is_file()], "loose files in loader/src"
    for folder in folders:
        assert len(list(folder.iterdir())) <= 12, folder


def test_an_upward_include_breaks_them(tmp_path: Path) -> None:
    loader = _copy(tmp_path)
    _add_include(loader / "src" / "common" / "text.cpp", "run/et_runner.hpp")
    problems = _tool().check(loader)
    assert any(p.startswith("src/common/text.cpp:") and '"run/et_runner.hpp" of run, a higher floor' in p
               for p in problems), problems


def test_a_public_header_of_a_higher_floor_breaks_them(tmp_path: Path) -> None:
    loader = _copy(tmp_path)
    _add_include(loader / "src" / "format" / "structure.cpp", "fatpte/dispatch.hpp")
    problems = _tool().check(loader)
    assert any(p.startswith("src/format/structure.cpp:") and '"fatpte/dispatch.hpp" of run, a higher floor' in p
               for p in problems), problems


def test_a_sibling_include_breaks_them(tmp_path: Path) -> None:
    loader = _copy(tmp_path)
    _add_include(loader / "src" / "device" / "select.cpp", "executorch/memory.hpp")
    problems = _tool().check(loader)
    assert any("src/device/select.cpp" in p and "a sibling on its floor" in p for p in problems), problems


def test_a_header_in_no_floor_breaks_them(tmp_path: Path) -> None:
    loader = _copy(tmp_path)
    (loader / "include" / "fatpte" / "extra.hpp").write_text("#pragma once\n", encoding="utf-8")
    _add_include(loader / "src" / "value" / "tensor.cpp", "fatpte/extra.hpp")
    problems = _tool().check(loader)
    assert any(p.startswith("include/fatpte/extra.hpp: in no floor") for p in problems), problems
    assert any("src/value/tensor.cpp" in p and "in no floor" in p for p in problems), problems


def test_a_cycle_breaks_them(tmp_path: Path) -> None:
    loader = _copy(tmp_path)
    (loader / "src" / "common" / "a.hpp").write_text('#include "common/b.hpp"\n', encoding="utf-8")
    (loader / "src" / "common" / "b.hpp").write_text('#include "common/a.hpp"\n', encoding="utf-8")
    problems = _tool().check(loader)
    assert "include cycle: src/common/a.hpp -> src/common/b.hpp -> src/common/a.hpp" in problems, problems


def test_the_tool_exits_one_when_broken(tmp_path: Path) -> None:
    loader = _copy(tmp_path)
    _add_include(loader / "src" / "manifest" / "verify.cpp", "container/manifest_view.hpp")
    done = subprocess.run([sys.executable, str(TOOL), str(loader)], capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert "loader floors: 1 broken" in done.stdout


def test_an_upward_include_between_rooms_breaks_them(tmp_path: Path) -> None:
    loader = _copy(tmp_path)
    _add_include(loader / "src" / "signature" / "keys.cpp", "signature/statement.hpp")
    problems = _tool().check(loader)
    assert any(p.startswith("src/signature/keys.cpp:")
               and 'room keys includes "signature/statement.hpp" of room statement, a higher room' in p
               for p in problems), problems


def test_a_downward_include_between_rooms_keeps_them(tmp_path: Path) -> None:
    loader = _copy(tmp_path)
    _add_include(loader / "src" / "signature" / "verify.cpp", "signature/libcrypto.hpp")
    assert _tool().check(loader) == []


def test_a_file_in_no_room_breaks_them(tmp_path: Path) -> None:
    loader = _copy(tmp_path)
    (loader / "src" / "signature" / "extra.cpp").write_text('#include "signature/keys.hpp"\n', encoding="utf-8")
    problems = _tool().check(loader)
    assert any(p.startswith("src/signature/extra.cpp: in no room of signature/") for p in problems), problems
