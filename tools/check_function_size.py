"""The house limit on function length (docs/architecture.md, "Invariants"): no function over 100
lines, in Python (fatpte/, tests/support/, tools/) or in the C++ loader (loader/src/,
loader/tools/), unless tools/function_sizes.toml names it with its reason.

    python tools/check_function_size.py [--list]

Prints one line per function over the limit that the exceptions file does not name, and one per
exception that no longer holds (the function is gone or short now: prune it); exits 1 when there is
either, 0 otherwise. `--list` prints every function over the limit, named or not, longest first.

A function's length is its lines from its first line (`def`, or the C++ line holding its name) to
its last, comments and blank lines included: what a reviewer scrolls through. Python is measured
from the AST (exact); ruff's PLR0915 counts statements, not lines, so a long function of long
literals or comments would pass it. C++ has no AST here (clang-tidy's readability-function-size is
not installed by the build): a scanner strips comments and literals, then takes a brace block at
namespace or class level whose header ends like a parameter list (`) const {`, `) -> T {`,
`) : member(x) {`) as a function body; lambdas and local classes count toward their function.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 100
EXCEPTIONS_NAME = "tools/function_sizes.toml"
EXCEPTIONS = ROOT / EXCEPTIONS_NAME
PYTHON_DIRS = ("fatpte", "tests/support", "tools")
PYTHON_SKIP = ("fatpte/_generated/",)
CPP_DIRS = ("loader/src", "loader/tools")
CPP_SUFFIXES = (".cpp", ".hpp", ".h", ".c", ".cc")


@dataclass(frozen=True)
class Function:
    path: str   # relative to the repository root
    name: str   # Python: Class.method; C++: as written before the parameter list (ns::Type::name)
    line: int
    lines: int

    @property
    def key(self) -> str:
        return f"{self.path}::{self.name}"


# ---- Python --------------------------------------------------------------------------------------

def python_functions(path: Path) -> list[Function]:
    rel = path.relative_to(ROOT).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
    found: list[Function] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found.append(Function(rel, name, first, (child.end_lineno or child.lineno) - first + 1))
                walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return found


# ---- C++ -----------------------------------------------------------------------------------------

# Comments, string and character literals (raw strings included), replaced by spaces of the same
# shape so that line numbers and braces outside them stay where they were.
_LEXEMES = re.compile(r'//[^\n]*|/\*.*?\*/|R"([^(\s]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                      re.DOTALL)
_SCOPE = re.compile(r'\b(namespace|class|struct|union|enum)\b|\bextern\s*$')
# A header that ends a parameter list, then qualifiers, a trailing return type or an initializer list.
_CLASS = re.compile(r'\b(?:class|struct|union)\s+(?:alignas\([^)]*\)\s*)?([A-Za-z_]\w*)')
_FUNCTION_END = re.compile(r'\)\s*(?:const|noexcept(?:\([^)]*\))?|override|final|mutable|&|&&|\s)*'
                           r'(?:->[^;{}]*|:[^;{}]*)?$', re.DOTALL)
_NAME = re.compile(r'((?:[A-Za-z_~][\w]*\s*::\s*)*(?:operator\s*[^\s(]+|~?[A-Za-z_]\w*))\s*(?:<[^;{}()]*>)?\s*\($')


def _blank(match: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def _function_name(header: str) -> str | None:
    """The name before the parameter list: the header cut at the '(' that the final ')' closes."""
    depth = 0
    close = header.rfind(")")
    if close < 0:
        return None
    for i in range(close, -1, -1):
        depth += {")": 1, "(": -1}.get(header[i], 0)
        if depth == 0:
            found = _NAME.search(header[: i + 1])
            return re.sub(r"\s+", "", found.group(1)) if found else None
    return None


def cpp_functions(path: Path) -> list[Function]:
    rel = path.relative_to(ROOT).as_posix()
    text = _LEXEMES.sub(_blank, path.read_text(encoding="utf-8"))
    text = re.sub(r"^\s*#[^\n]*(?:\\\n[^\n]*)*", _blank, text, flags=re.MULTILINE)  # preprocessor lines
    found: list[Function] = []
    stack: list[tuple[str, int, str]] = []  # (kind, line of its header, name) of each open brace
    start = 0  # where the current header begins: after the last ';', '{' or '}' at this level
    for i, ch in enumerate(text):
        if ch not in "{};":
            continue
        in_code = any(kind != "scope" for kind, _, _ in stack)
        if ch == "{":
            header = text[start:i]
            if in_code:
                kind, name = "block", ""
            elif _SCOPE.search(header) and "(" not in header.split("=")[0][-200:]:
                kind, name = "scope", (m.group(1) if (m := _CLASS.search(header)) else "")
            elif _FUNCTION_END.search(header.rstrip()) and (name := _function_name(header.rstrip()) or ""):
                kind = "function"
                name = "::".join([*(n for k, _, n in stack if n), name])  # FatBackend::init
            else:
                kind, name = "block", ""
            first = text.count("\n", 0, start + len(header) - len(header.lstrip())) + 1
            stack.append((kind, first, name))
        elif ch == "}" and stack:
            kind, first, name = stack.pop()
            if kind == "function":
                last = text.count("\n", 0, i) + 1
                found.append(Function(rel, name, first, last - first + 1))
        start = i + 1
    return found


# ---- The check -----------------------------------------------------------------------------------

def all_functions() -> list[Function]:
    found: list[Function] = []
    for folder in PYTHON_DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if not any(path.relative_to(ROOT).as_posix().startswith(s) for s in PYTHON_SKIP):
                found += python_functions(path)
    for folder in CPP_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in CPP_SUFFIXES:
                found += cpp_functions(path)
    return found


def read_exceptions(path: Path = EXCEPTIONS) -> dict[str, str]:
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    return {str(k): str(v) for k, v in doc.get("over_the_limit", {}).items()}


def problems(functions: list[Function], exceptions: dict[str, str]) -> list[str]:
    long = {f.key: f for f in functions if f.lines > LIMIT}
    out = [f"{f.path}:{f.line}: {f.name} is {f.lines} lines, over the limit of {LIMIT}: split it, or name it "
           f"with its reason in {EXCEPTIONS_NAME}" for k, f in sorted(long.items()) if k not in exceptions]
    out += [f"{EXCEPTIONS_NAME}: {k} is not over {LIMIT} lines any more (or is gone): remove it"
            for k in sorted(exceptions) if k not in long]
    return out


def main(argv: list[str]) -> int:
    functions = all_functions()
    if "--list" in argv:
        for f in sorted((f for f in functions if f.lines > LIMIT), key=lambda f: -f.lines):
            print(f'"{f.key}" = ""  # {f.lines} lines')
        return 0
    found = problems(functions, read_exceptions())
    print("\n".join(found) if found else f"no function over {LIMIT} lines but the named exceptions")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
