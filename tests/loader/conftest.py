"""The one loader-build fixture of the loader tests (tests/builds.py says how a missing build skips
or fails).

    pytestmark = pytest.mark.loader_build("fatpte-run", "backends", sdk=True)  # a module's need

    @pytest.mark.loader_build("fatpte-validate", only="release")                # one test's need
    def test_it(build: Path) -> None: ...

`build` is the build folder, once per build (release, then ASan) unless the mark says `only=`;
`exe` is its fatpte-run. The closest mark wins (a test's over its module's); without one, a test
needs fatpte-run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builds import LOADER_BUILDS, loader_build

DEFAULT_TARGETS = ("fatpte-run",)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "loader_build(*targets, sdk=False, only=None): what a loader test runs "
                                       "from the build folder (tests/loader/conftest.py)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "build" in metafunc.fixturenames or "exe" in metafunc.fixturenames:
        mark = metafunc.definition.get_closest_marker("loader_build")
        only = mark.kwargs.get("only") if mark else None
        metafunc.parametrize("build", [only] if only else sorted(LOADER_BUILDS), indirect=True)


@pytest.fixture
def build(request: pytest.FixtureRequest) -> Path:
    mark = request.node.get_closest_marker("loader_build")
    targets = mark.args if mark and mark.args else DEFAULT_TARGETS
    return loader_build(request.param, *targets, sdk=bool(mark and mark.kwargs.get("sdk")))


@pytest.fixture
def exe(build: Path) -> Path:
    return build / "fatpte-run"
