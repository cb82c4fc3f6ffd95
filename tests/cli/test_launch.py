"""The console script's click-free route (fatpte/cli/launch.py) against the click command tree.

The launcher may decline any command line (then click runs it), but whatever it does run must
end exactly as click would: same stdout, same stderr, same exit status, same files. Its option
table is checked against the click declarations, and both routes run the same generated command
lines, good and bad.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fatpte
from fatpte.cli import commands as cli_commands
from fatpte.cli import launch
from fatpte.cli.main import main
from tests.paths import ROOT

REPO = ROOT
VECTORS = REPO / "specs" / "vectors"
PROGRAM = REPO / "tests" / "fixtures" / "executorch" / "add_nfat.pte"

Outcome = tuple[int, str, str]


def fast(argv: Sequence[str]) -> Outcome | None:
    """The launcher's route, in process; None when it hands the command to click (and then it
    must have printed nothing)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = launch.run(argv)
    if status is None:
        assert (out.getvalue(), err.getvalue()) == ("", ""), argv
        return None
    return status, out.getvalue(), err.getvalue()


def slow(argv: Sequence[str]) -> Outcome:
    result = CliRunner().invoke(main, list(argv), prog_name="fatpte")
    assert result.exception is None or isinstance(result.exception, SystemExit), (argv, result.exception)
    return result.exit_code, result.stdout, result.stderr


# ---------------------------------------------------------------------------------------------
# The table is the click declaration
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("verb", sorted(launch.VERBS))
def test_the_option_table_is_what_click_declares(verb: str) -> None:
    command = main.commands[verb]
    spec = launch.VERBS[verb]
    flags: dict[str, str] = {}
    values: dict[str, str] = {}
    multiple: dict[str, str] = {}
    required: set[str] = set()
    paths: dict[str, bool] = {}
    for param in command.params:
        assert param.name is not None
        if isinstance(param.type, click.Path):
            kind = param.type
            assert kind.type is None, f"{verb} {param.name}: the bodies take paths as typed (str)"
            # What launch._path_as_click_takes_it mirrors: only these checks, nothing else.
            assert (kind.exists, kind.file_okay, kind.readable, kind.writable, kind.executable, kind.resolve_path,
                    kind.allow_dash) == (False, True, True, False, False, False, False), param.name
            paths[param.name] = kind.dir_okay
        else:
            assert param.type is click.STRING or isinstance(param.type, click.types.BoolParamType), param.name
        if param.required:
            required.add(param.name)
        if isinstance(param, click.Argument):
            assert param.name == spec.positional
            assert (param.nargs == -1) == spec.many and (param.nargs in (-1, 1))
            continue
        assert isinstance(param, click.Option)
        assert not param.secondary_opts and param.envvar is None and param.callback is None, param.name
        table = flags if param.is_flag else multiple if param.multiple else values
        for spelling in param.opts:
            table[spelling] = param.name
    assert (spec.flags, spec.values, spec.multiple) == (flags, values, multiple)
    assert spec.required == required - {spec.positional}
    assert spec.paths == paths
    # The body takes exactly the parameters click passes, and what the launcher passes for an
    # option not given is click's default.
    body = getattr(cli_commands, verb)
    assert set(inspect.signature(body).parameters) == {p.name for p in command.params}
    least = ["no-such.nfat", *(["--device", "d"] if "device" in spec.required else []),
             *(["-o", "no-such.bin"] if "output" in spec.required else [])]
    parsed = launch.parse([verb, *least])
    assert parsed is not None
    assert parsed[1] == command.make_context(verb, list(least)).params


def test_the_help_option_is_left_to_click() -> None:
    names = {*main.context_settings["help_option_names"]}
    for spec in launch.VERBS.values():
        assert names.isdisjoint({*spec.flags, *spec.values, *spec.multiple})


# ---------------------------------------------------------------------------------------------
# The two routes agree
# ---------------------------------------------------------------------------------------------


def _pack_sample(path: Path) -> None:
    fatpte.pack([fatpte.Specialization("portable", b"tiny", name="cpu"),
                 fatpte.Specialization("xnnpack", b"fp32" * 50, name="xnn",
                                       requires={"arch": ["x86_64", "aarch64"]}),
                 fatpte.Specialization("cuda", b"gpu!" * 8, name="gpu",
                                       requires={"accelerators": [{"kind": "cuda", "targets": ["sm_80"]}]})],
                path)


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        _pack_sample(root / "c.nfat")
        (root / "dir").mkdir()
        (root / "unreadable.nfat").write_bytes((root / "c.nfat").read_bytes())
        (root / "unreadable.nfat").chmod(0)
        shutil.copy(VECTORS / "v2-named-data.nfat", root / "named.nfat")
        shutil.copy(VECTORS / "v1-one-entry.nfat", root / "v1.nfat")
        shutil.copy(VECTORS / "v1-truncated-payload.nfat", root / "bad.nfat")
        shutil.copy(PROGRAM, root / "prog.pte")
        yield root


def _outputs(root: Path) -> set[str]:
    return {p.name for p in root.iterdir()}


def _take_new(root: Path, before: set[str]) -> dict[str, bytes]:
    """The files a command wrote in `root`, removed so the next run starts from the same state."""
    made = {n: (root / n).read_bytes() for n in _outputs(root) - before}
    for n in made:
        (root / n).unlink()
    return made


def _same(argv: list[str], root: Path) -> None:
    before = _outputs(root)
    wanted = slow(argv)
    made = _take_new(root, before)
    got = fast(argv)
    if got is None:
        assert _outputs(root) == before, argv
        return
    assert got == wanted, argv
    assert _take_new(root, before) == made, argv


_TAKEN = [
    ["info", "c.nfat"], ["info", "--json", "c.nfat"], ["info", "c.nfat", "--map"], ["info", "named.nfat", "--map",
                                                                                     "--json"],
    ["info", "v1.nfat"], ["info", "bad.nfat"], ["info", "missing.nfat"], ["info", "prog.pte"],
    ["info", "--json", "prog.pte"], ["info", ""], ["info", "dir"],
    ["select", "c.nfat", "--device", "host"], ["select", "--device", "raspberry-pi-5", "c.nfat", "--explain"],
    ["select", "c.nfat", "--device=generic-x86_64", "--json"], ["select", "c.nfat", "--device", "no-such-device"],
    ["select", "c.nfat", "--device", "host", "--exclude", "xnn,cpu", "--json"],
    ["select", "c.nfat", "--device", "host", "--exclude", "xnn", "--exclude", "cpu"],
    ["select", "c.nfat", "--device", "host", "--prefer", "cpu", "--prefer", "xnn"],
    ["select", "prog.pte", "--device", "host"], ["select", "prog.pte", "--device", "host", "--json"],
    ["select", "bad.nfat", "--device", "host"],
    ["extract", "c.nfat", "--name", "xnn", "-o", "out.bin"], ["extract", "c.nfat", "--backend", "cuda", "-q",
                                                               "--output=out.bin"],
    ["extract", "c.nfat", "--device", "host", "--prefer", "cpu", "-o", "out.bin"],
    ["extract", "c.nfat", "--name", "nope", "-o", "out.bin"],
    ["extract", "named.nfat", "--name", "cpu", "-o", "out.bin", "--data-out", "out.ptd"],
    ["extract", "bad.nfat", "--name", "x", "-o", "out.bin"],
    ["validate", "c.nfat"], ["validate", "c.nfat", "bad.nfat", "missing.nfat", "--json"], ["validate", "dir", "-q"],
    ["validate", "--strict", "v1.nfat", "named.nfat"], ["validate", "prog.pte", "--skip-plain-pte"],
]
_DECLINED = [
    [], ["--help", "info"], ["-V"], ["info"], ["info", "-h"], ["info", "c.nfat", "--bogus"], ["info", "c.nfat", "x"],
    ["info", "--", "c.nfat"], ["info", "--json=1", "c.nfat"], ["info", "-"],
    ["select", "c.nfat"], ["select", "c.nfat", "--device"], ["select", "c.nfat", "--device", "-x"],
    ["select", "c.nfat", "--device", "a", "--device", "b"], ["thin", "c.nfat", "--device", "host", "-o", "x"],
    ["extract", "c.nfat", "--name", "cpu"], ["extract", "c.nfat", "--name", "cpu", "-o", "dir"],
    ["extract", "c.nfat", "--name", "cpu", "-qf", "-o", "x"], ["extract", "c.nfat", "--name", "cpu", "-o=x"],
    ["extract", "c.nfat", "--name", "cpu", "--backend", "portable", "-o", "x"],
    ["extract", "c.nfat", "--name", "cpu", "--prefer", "cpu", "-o", "x"],
    ["extract", "c.nfat", "--name", "cpu", "-o", "x", "--data-out", "./x"], ["validate"],
    ["extract", "c.nfat", "--name", "cpu", "-o", "c.nfat", "-f", "--data-out", "c.nfat"],
    ["extract", "c.nfat", "--name", "cpu", "-o", "c.nfat"],  # -o is FILE itself: a usage error, click's
]


def test_plain_forms_run_without_click_and_match_it(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    before = _outputs(workdir)
    for argv in _TAKEN:
        assert fast(argv) is not None, argv
        _take_new(workdir, before)
        _same(argv, workdir)


def test_everything_else_is_left_to_click(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    for argv in _DECLINED:
        assert fast(argv) is None, argv
    # click refuses a FILE it may not read ("is not readable", exit 2); root reads anything.
    if not os.access(workdir / "unreadable.nfat", os.R_OK):
        assert fast(["info", "unreadable.nfat"]) is None
    assert not (workdir / "x").exists()


def test_completion_is_left_to_click(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("_FATPTE_COMPLETE", "bash_complete")
    assert fast(["info", "c.nfat"]) is None


_FILES = ["c.nfat", "named.nfat", "v1.nfat", "bad.nfat", "prog.pte", "missing.nfat", "dir", "unreadable.nfat", ""]
_VALUES = {
    "device": ["host", "raspberry-pi-5", "nvidia-sm80-server", "x86-64-v2", "no-such-device", "dir"],
    "name": ["cpu", "xnn", "gpu", "nope", ""], "backend": ["portable", "xnnpack", "cuda", "vulkan"],
    "output": ["out.bin", "dir", "c.nfat", "out.ptd"], "data_out": ["out.ptd", "out.bin", "dir"],
    "prefer": ["cpu", "xnn", "xnn,cpu", "gpu", ""], "exclude": ["cpu", "xnn", "xnn,cpu", "gpu", " , "],
}
# Tokens outside the plain forms, which the launcher must leave to click.
_JUNK = ["-", "--", "-h", "--help", "-qf", "--json=1", "-o=x", "--bogus", "-V", "--device"]


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    """A command of the table with well-formed options in any order (so that most run on the
    launcher's route), sometimes with one token of another shape."""
    verb = draw(st.sampled_from(sorted(launch.VERBS)))
    spec = launch.VERBS[verb]
    parts = [[draw(st.sampled_from(_FILES))] for _ in range(draw(st.integers(1, 2)) if spec.many else 1)]
    spellings = sorted({*spec.flags, *spec.values, *spec.multiple})
    for spelling in draw(st.lists(st.sampled_from(spellings), max_size=5)):
        name = spec.flags.get(spelling)
        if name is not None:
            parts.append([spelling])
            continue
        name = spec.values.get(spelling) or spec.multiple[spelling]
        value = draw(st.sampled_from(_VALUES[name]))
        joined = spelling.startswith("--") and draw(st.booleans())
        parts.append([f"{spelling}={value}"] if joined else [spelling, value])
    argv = [verb, *(token for part in draw(st.permutations(parts)) for token in part)]
    if draw(st.integers(0, 5)) == 0:
        argv.insert(draw(st.integers(1, len(argv))), draw(st.sampled_from(_JUNK)))
    return argv


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=command_lines())
def test_generated_command_lines_agree(workdir: Path, argv: list[str]) -> None:
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        for n in _outputs(workdir) & {"out.bin", "out.ptd"}:
            (workdir / n).unlink()
        _same(argv, workdir)
    finally:
        os.chdir(cwd)


# ---------------------------------------------------------------------------------------------
# The installed entry points
# ---------------------------------------------------------------------------------------------


def _modules(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "fatpte", *args], capture_output=True,
                          text=True, check=False)
    return proc, {line.split("|")[-1].strip() for line in proc.stderr.splitlines()
                  if line.startswith("import time:")}


def test_python_m_fatpte_runs_plain_forms_without_click(tmp_path: Path) -> None:
    # A container of its own: the generated command lines above may write over the module's
    # c.nfat (`extract ... -o c.nfat -f`), as they are meant to be able to.
    container = tmp_path / "c.nfat"
    _pack_sample(container)
    proc, modules = _modules("select", str(container), "--device", "raspberry-pi-5")
    assert proc.returncode == 0 and proc.stdout == "xnn\n"
    assert "fatpte.cli.commands" in modules and "click" not in modules and "fatpte.cli.main" not in modules
    proc, modules = _modules("select", str(container), "--device", "raspberry-pi-5", "--bogus")
    assert proc.returncode == 2 and "No such option" in proc.stderr and "click" in modules
    proc, _ = _modules("extract", str(container), "-o", str(tmp_path / "never.bin"))
    assert proc.returncode == 2 and "give exactly one of --name, --backend or --device" in proc.stderr
    assert "Usage: fatpte extract" in proc.stderr and not (tmp_path / "never.bin").exists()


def test_the_console_script_is_the_launcher() -> None:
    text = (REPO / "pyproject.toml").read_text()
    assert 'fatpte = "fatpte.cli.launch:main"' in text


# ---------------------------------------------------------------------------------------------
# fatpte --help
# ---------------------------------------------------------------------------------------------


def test_the_help_snapshot_is_up_to_date() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "gen_cli_help.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


_CLICK_HELP = "from fatpte.cli.main import main; main(['--help'], prog_name='fatpte')"
_LAUNCHER = "import sys; from fatpte.cli.launch import main; sys.exit(main(sys.argv[1:]))"


def _help_modules(code: str, *args: str, columns: int) -> tuple[str, set[str]]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code, *args], capture_output=True, text=True,
                          check=True, env={**os.environ, "COLUMNS": str(columns)}, cwd=REPO)
    return proc.stdout, {line.split("|")[-1].strip() for line in proc.stderr.splitlines()
                         if line.startswith("import time:")}


@pytest.mark.parametrize("columns", [40, 79, 80, 81, 200])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_top_level_help_is_click_s_at_every_width(columns: int, flag: str) -> None:
    from fatpte._generated.cli_help import MIN_COLUMNS

    wanted, _ = _help_modules(_CLICK_HELP, columns=columns)
    got, modules = _help_modules(_LAUNCHER, flag, columns=columns)
    assert got == wanted
    assert ("click" in modules) == (columns < MIN_COLUMNS)


@pytest.mark.parametrize("columns", [60, 120])
def test_top_level_help_on_a_terminal(columns: int) -> None:
    """No COLUMNS: the width comes from the terminal, as click reads it."""
    import fcntl
    import struct
    import termios

    outputs = []
    for code in (_CLICK_HELP, _LAUNCHER):
        leader, follower = os.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        proc = subprocess.run([sys.executable, "-c", code, "--help"], stdout=follower, stderr=subprocess.PIPE,
                              env=env, cwd=REPO, check=True)
        os.close(follower)
        chunks = []
        with contextlib.suppress(OSError):  # EIO once the terminal's other end is closed and drained
            while chunk := os.read(leader, 65536):
                chunks.append(chunk)
        os.close(leader)
        assert proc.returncode == 0
        outputs.append(b"".join(chunks))
    assert outputs[0] == outputs[1] and outputs[0].startswith(b"Usage: fatpte")
