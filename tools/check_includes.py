"""The C++ loader's floors (loader/layers.toml): no #include runs up a floor or across to a
sibling, none runs up a room of a folder that has rooms ([rooms]), and no include cycle, over
loader/src/ and loader/include/fatpte/. What import-linter's contracts do for fatpte/
(pyproject.toml), for the loader's #include graph.

    python tools/check_includes.py [LOADER_DIR]

Prints one line per broken rule, naming the file, its line, the header and both floors; exits 1
when any rule is broken, 0 otherwise. System headers (<...>) are not checked.
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
SOURCES = (".cpp", ".hpp", ".h", ".c")


@dataclass(frozen=True)
class Floors:
    rank: dict[str, int]          # floor name -> its height (0 lowest)
    headers: dict[str, str]       # public or generated header -> its floor
    rooms: dict[str, dict[str, int]]  # floor -> its folder's rooms (file stems) -> height (0 lowest)

    @classmethod
    def read(cls, path: Path) -> Floors:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        rank: dict[str, int] = {}
        for height, row in enumerate(doc["floors"]):
            for name in row.split("|"):
                rank[name.strip()] = height
        rank["application"] = len(doc["floors"])
        rooms = {floor: {room: height for height, room in enumerate(order)}
                 for floor, order in doc.get("rooms", {}).items()}
        return cls(rank, dict(doc["headers"]), rooms)


def _floor_of(loader: Path, floors: Floors, file: Path) -> str | None:
    rel = file.relative_to(loader)
    if rel.parts[0] == "src" and len(rel.parts) >= 3:
        return rel.parts[1]
    if rel.parts[0] == "include":
        return floors.headers.get("/".join(rel.parts[1:]))
    return None


def _resolve(loader: Path, floors: Floors, name: str) -> tuple[str | None, Path | None]:
    """The floor of an included header and its file in the tree (None when generated)."""
    if name in floors.headers:
        public = loader / "include" / name
        return floors.headers[name], public if public.is_file() else None
    first = name.split("/", 1)[0]
    if first in floors.rank and (loader / "src" / name).is_file():
        return first, loader / "src" / name
    return None, None


def check(loader: Path) -> list[str]:
    floors = Floors.read(loader / "layers.toml")
    files = sorted(p for d in ("src", "include") for p in (loader / d).rglob("*") if p.suffix in SOURCES)
    problems: list[str] = []
    edges: dict[Path, list[Path]] = {}
    for file in files:
        rel = file.relative_to(loader)
        floor = _floor_of(loader, floors, file)
        if floor is None or floor not in floors.rank:
            problems.append(f"{rel}: in no floor of layers.toml (a folder of src/ or a [headers] row)")
            continue
        rooms = floors.rooms.get(floor) if rel.parts[0] == "src" else None
        if rooms is not None and file.stem not in rooms:
            problems.append(f"{rel}: in no room of {floor}/ (add \"{file.stem}\" to [rooms] in layers.toml)")
        text = file.read_text(encoding="utf-8", errors="replace")
        for match in INCLUDE.finditer(text):
            name = match.group(1)
            line = text.count("\n", 0, match.start()) + 1
            target_floor, target = _resolve(loader, floors, name)
            if target_floor is None:
                problems.append(f"{rel}:{line}: includes \"{name}\", which is in no floor "
                                "(name it from src/ as FLOOR/FILE, or add it to [headers] in layers.toml)")
                continue
            if target is not None:
                edges.setdefault(file, []).append(target)
            mine, theirs = floors.rank[floor], floors.rank[target_floor]
            if theirs > mine:
                problems.append(f"{rel}:{line}: {floor} includes \"{name}\" of {target_floor}, a higher floor")
            elif theirs == mine and target_floor != floor:
                problems.append(f"{rel}:{line}: {floor} includes \"{name}\" of {target_floor}, "
                                "a sibling on its floor")
            elif rooms is not None and target is not None and target_floor == floor:
                problems.extend(_room_problem(rel, line, name, file.stem, target.stem, rooms))
    problems.extend(_cycles(loader, edges))
    return problems


def _room_problem(rel: Path, line: int, name: str, mine: str, theirs: str, rooms: dict[str, int]) -> list[str]:
    """An include from room `mine` of a folder with rooms to a file of room `theirs` of it, when it runs up."""
    if mine not in rooms or theirs not in rooms:
        return []  # a file in no room is reported as such
    if rooms[theirs] > rooms[mine]:
        return [f"{rel}:{line}: room {mine} includes \"{name}\" of room {theirs}, a higher room"]
    return []


def _cycles(loader: Path, edges: dict[Path, list[Path]]) -> list[str]:
    """Each include cycle once, as the chain of files that closes it."""
    state: dict[Path, int] = {}  # 1: on the path, 2: done
    stack: list[Path] = []
    found: list[str] = []

    def visit(node: Path) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in edges.get(node, []):
            if state.get(nxt) == 1:
                chain = stack[stack.index(nxt):] + [nxt]
                found.append("include cycle: " + " -> ".join(str(p.relative_to(loader)) for p in chain))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found


def main(argv: list[str]) -> int:
    loader = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "loader"
    problems = check(loader)
    for p in problems:
        print(p)
    print(f"loader floors: {len(problems)} broken" if problems else "loader floors: kept")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
