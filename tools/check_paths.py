"""Every repository path quoted in the docs and in code comments exists: Markdown (README.md,
docs/, specs/, loader/README.md, fuzz/README.md) and the comments and docstrings of the code
(Python, C and C++, CMake, the Makefile, pyproject.toml). `make lint` runs it.

    python tools/check_paths.py [FILE ...]

Prints one line per path that does not exist, naming the file and line where it is quoted; exits 1
when there is any, 0 otherwise. With FILEs, checks only those.

Only what is plainly a path into this repository is checked, so that the check does not cry wolf:
a word that starts with one of the repository's top-level folders (fatpte/, loader/, specs/, ...)
at the start of a token and ends with a file extension (.py, .md, .cpp, ...). Globs and
placeholders (`*`, `<name>`, `{a,b}`, `...`, NAME) are skipped. A C or C++ header quoted as it is
included (`fatpte/status.hpp`) is found under loader/include/ too, and a path relative to a folder
above the quoting file under that folder (loader/README.md quotes loader/tests/ as `tests/`).
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP = ("bench", "docs", "examples", "fatpte", "fuzz", "loader", "specs", "tests", "tools")
EXTENSIONS = ("py", "md", "cpp", "hpp", "h", "c", "toml", "json", "fbs", "txt", "cmake", "pte", "ptd", "nfat",
              "pem", "yml", "yaml", "sh", "dict", "in", "cfg", "ini")
_TOPS, _EXTS = "|".join(TOP), "|".join(EXTENSIONS)
PATH = re.compile(rf"(?<![\w./\-~$])((?:{_TOPS})/[\w./\-+]*\.(?:{_EXTS}))(?![\w*<>{{}}])")
INCLUDE_ROOTS = ("", "loader/include/")
MARKDOWN = ("README.md", "docs", "specs", "loader/README.md", "fuzz/README.md")
CODE_SUFFIXES = {".py": "python", ".cpp": "c", ".hpp": "c", ".h": "c", ".c": "c", ".cmake": "hash",
                 ".toml": "hash"}
CODE_NAMES = {"Makefile": "hash", "CMakeLists.txt": "hash"}
SKIP = ("fatpte/_generated/", "specs/vectors/", "tests/fixtures/")
C_COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.DOTALL)


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line and not line.startswith(SKIP)]


def _python_prose(text: str) -> list[tuple[int, str]]:
    """Comments and docstrings of a Python file, with the line each starts on."""
    found: list[tuple[int, str]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                found.append((tok.start[0], tok.string))
        tree = ast.parse(text)
    except (SyntaxError, tokenize.TokenError):
        return found
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            found.append((body[0].lineno, body[0].value.value))
    return found


def _c_prose(text: str) -> list[tuple[int, str]]:
    return [(text.count("\n", 0, m.start()) + 1, m.group(0)) for m in C_COMMENT.finditer(text)
            if not m.group(0).startswith('"')]


def _hash_prose(text: str) -> list[tuple[int, str]]:
    return [(n, line[line.index("#"):]) for n, line in enumerate(text.splitlines(), 1) if "#" in line]


def prose(rel: str, text: str) -> list[tuple[int, str]]:
    """The parts of a file that quote paths for people: all of a Markdown file, the comments of code."""
    if rel.endswith(".md"):
        return [(1, text)]
    kind = CODE_NAMES.get(Path(rel).name) or CODE_SUFFIXES.get(Path(rel).suffix)
    return {"python": _python_prose, "c": _c_prose, "hash": _hash_prose}[kind](text) if kind else []


def _exists(path: str, quoted_in: str) -> bool:
    """At the root, under loader/include/ (a header as included), or under a folder above the quoting
    file (loader/README.md quotes loader/tests/ as `tests/`: loader/ is a project of its own)."""
    above = [p.as_posix() + "/" for p in Path(quoted_in).parents if p.as_posix() != "."]
    return any((ROOT / (base + path)).exists() for base in (*INCLUDE_ROOTS, *above))


def _placeholder(path: str) -> bool:
    """`...` elided, or a name in capitals standing for any (specs/devices/NAME.json)."""
    stem = Path(path).name.split(".")[0]
    return "..." in path or stem.isupper() and stem not in ("README", "LICENSE", "CHANGELOG")


def stale(rel: str, text: str) -> list[str]:
    out = []
    for first, chunk in prose(rel, text):
        for m in PATH.finditer(chunk):
            path = m.group(1)
            if _placeholder(path) or _exists(path, rel):
                continue
            line = first + chunk.count("\n", 0, m.start())
            out.append(f"{rel}:{line}: {path} does not exist")
    return out


def checked_files(files: list[str]) -> list[str]:
    if files:
        return files
    return [f for f in tracked() if f.endswith(".md") and f.startswith(MARKDOWN)
            or not f.endswith(".md") and (Path(f).name in CODE_NAMES or Path(f).suffix in CODE_SUFFIXES)]


def main(argv: list[str]) -> int:
    found = []
    for rel in checked_files(argv):
        path = ROOT / rel
        if path.is_file():
            found += stale(rel, path.read_text(encoding="utf-8", errors="replace"))
    print("\n".join(found) if found else "every quoted repository path exists")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
