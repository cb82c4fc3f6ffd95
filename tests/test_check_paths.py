"""The stale-path check (tools/check_paths.py, run by `make lint`): a repository path quoted in
Markdown or in a code comment that does not exist fails it, naming the file and line; what is not
plainly a repository path (a glob, a placeholder, a word without an extension) is left alone."""

from __future__ import annotations

from typing import Any

from tests.scripts import load_script


def _tool() -> Any:
    return load_script("tools/check_paths.py")


def test_the_repository_quotes_only_paths_that_exist() -> None:
    tool = _tool()
    assert tool.main([]) == 0


def test_a_made_up_path_in_markdown_fails() -> None:
    text = "Intro.\n\nThe signing code is in `fatpte/ops/signing.py`, the layout in fatpte/format/layout.py.\n"
    assert _tool().stale("docs/example.md", text) == ["docs/example.md:3: fatpte/ops/signing.py does not exist"]


def test_a_made_up_path_in_a_comment_fails_and_code_is_left_alone() -> None:
    tool = _tool()
    python = ('"""Reads what specs/nfat.md says."""\n\nPATH = "specs/made-up.md"  # see specs/nothing-here.md\n')
    assert tool.stale("fatpte/x.py", python) == ["fatpte/x.py:3: specs/nothing-here.md does not exist"]
    cpp = '#include "fatpte/status.hpp"\n// as loader/src/nowhere/gone.cpp does\nconst char* p = "tools/no.py";\n'
    assert tool.stale("loader/src/x.cpp", cpp) == ["loader/src/x.cpp:2: loader/src/nowhere/gone.cpp does not exist"]


def test_globs_placeholders_and_other_words_are_not_paths() -> None:
    text = ("tests/fixtures/executorch/*.pte, specs/devices/NAME.json, specs/devices/<name>.json, "
            "fatpte/ops/..., fatpte.ops.signing, build/loader/fatpte-run, /usr/include/fatpte/x.h, "
            "the header fatpte/status.hpp (loader/include/), loader's `tests/json_test.cpp`\n")
    assert _tool().stale("loader/README.md", text) == []
