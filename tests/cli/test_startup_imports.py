"""The read path's start-up cost: what `fatpte info`, `select`, `validate` and `extract` import.

`dataclasses` (which imports inspect, ast, dis, tokenize), `inspect` and `pathlib` each cost
milliseconds of a command whose whole budget is twice `import fatpte` (issue 7). A fresh
interpreter runs every read-path call and reports which of them got imported, and by whom.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.paths import ROOT

VECTORS = ROOT / "specs" / "vectors"
FORBIDDEN = ("dataclasses", "inspect", "pathlib")

# Each step runs in order in one interpreter; after each, the forbidden modules present are
# recorded. `extract` returns a `pathlib.Path` (its documented type), so pathlib arrives there, and
# only there: it is the last step, so no earlier call can lean on it.
CHILD = """
import json, sys
at_start = sorted(m for m in {forbidden!r} if m in sys.modules)
import fatpte
from fatpte.ops import info
from fatpte.device import selection
from fatpte.device.profile import DeviceProfile

FORBIDDEN = {forbidden!r}
seen = {{}}

def step(name, run):
    run()
    seen[name] = sorted(m for m in FORBIDDEN if m in sys.modules)

def select(container, device):
    try:
        chosen = selection.select(container, device)
        chosen.explain()
        json.dumps(chosen.to_json())
    except fatpte.SelectionError as exc:
        json.dumps(exc.report)

seen["interpreter start"] = at_start
step("import", lambda: None)
container = fatpte.open({matrix!r})
seen["open"] = sorted(m for m in FORBIDDEN if m in sys.modules)
named = fatpte.open({named!r})
step("summary", lambda: (json.dumps(info.summary(container)), json.dumps(info.summary(named))))
step("byte_map", lambda: [row.to_json() for row in info.byte_map(named)])
step("select host", lambda: select(container, DeviceProfile.host()))
step("select named", lambda: select(container, DeviceProfile.load("nvidia-sm90-server")))
step("select file", lambda: select(container, DeviceProfile.load({profile!r})))
step("validate", lambda: (fatpte.validate({matrix!r}).to_json(), fatpte.validate({named!r}).ok))
container.close()
named.close()
step("extract", lambda: fatpte.extract({matrix!r}, "metal", {dest!r}))
print(json.dumps(seen))
"""


def _chain(importtime: str, module: str) -> str:
    """`pathlib <- fatpte.device.profile <- fatpte.device.selection` from `python -X importtime` output, which
    prints each module after the modules it imported, one indentation level deeper."""
    rows = []
    for line in importtime.splitlines():
        if not line.startswith("import time:") or line.endswith("| package"):
            continue
        name_field = line.rsplit("|", 1)[1]
        rows.append((len(name_field) - len(name_field.lstrip()), name_field.strip()))
    for i, (depth, name) in enumerate(rows):
        if name == module:
            chain = [name]
            for later_depth, later in rows[i + 1 :]:
                if later_depth < depth:
                    chain.append(later)
                    depth = later_depth
            return " <- ".join(chain)
    return f"{module} (not found in -X importtime output)"


def test_read_path_imports_no_dataclasses_inspect_or_pathlib(tmp_path: Path) -> None:
    code = CHILD.format(
        forbidden=FORBIDDEN,
        matrix=str(VECTORS / "v2-selection-matrix.nfat"),
        named=str(VECTORS / "v2-named-data.nfat"),
        profile=str(ROOT / "specs" / "devices" / "x86-64-v3.json"),
        dest=str(tmp_path / "metal.bin"),
    )
    # -S: no site, hence no .pth files. An editable install's finder (setuptools) imports pathlib
    # from a .pth file at every start, which would hide fatpte's own imports; the checkout and the
    # installed dependencies are put on the path directly instead.
    paths = dict.fromkeys([str(ROOT), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run([sys.executable, "-S", "-X", "importtime", "-c", code], capture_output=True, text=True,
                          check=False, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    seen: dict[str, list[str]] = json.loads(done.stdout)
    assert list(seen) == ["interpreter start", "import", "open", "summary", "byte_map", "select host", "select named", "select file",
                          "validate", "extract"]
    allowed = {"extract": {"pathlib"}}
    problems = [
        f"after {step!r}: {_chain(done.stderr, module)}"
        for step, modules in seen.items()
        for module in modules
        if module not in allowed.get(step, set())
    ]
    assert not problems, "the read path imported a module it must not:\n" + "\n".join(problems)
    assert (tmp_path / "metal.bin").is_file()


def test_chain_names_the_importers() -> None:
    # Shaped like real -X importtime output: children first, one level deeper than their parent.
    sample = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       100 |        100 |       inspect\n"
        "import time:       200 |        300 |     dataclasses\n"
        "import time:        50 |         50 |     fatpte.format.layout\n"
        "import time:       400 |        750 |   fatpte.errors\n"
        "import time:       500 |       1250 | fatpte.container.reader\n"
    )
    assert _chain(sample, "inspect") == "inspect <- dataclasses <- fatpte.errors <- fatpte.container.reader"
    assert _chain(sample, "pathlib") == "pathlib (not found in -X importtime output)"
