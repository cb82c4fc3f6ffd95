"""Progress on a terminal for the command line: a bar when the amount of work is known, an
elapsed-time status line when it is one library call, shown only after a delay.

Work that ends within `DELAY` seconds shows nothing, so quick commands stay quiet. Nothing is
drawn when stderr is not a terminal (pipes, CI logs, tests) or with --quiet; results on stdout
are never touched. Drawing happens on a daemon thread so the work itself is never slowed.

Why not `click.progressbar`, although click is a dependency: measured reasons, start-up and
behaviour.
- Start-up: `validate` and `extract` draw progress on the launcher's path, which runs without
  click (fatpte/cli/launch.py; tests/cli/test_launch.py checks that click is not imported there).
  Importing click for the bar adds 48 ms to a 65 ms start (15 runs each, median, on the 2-core
  development machine, 2026-11: `python -c "import fatpte.cli.commands, fatpte.cli.progress"`
  with and without `click`); docs/performance.md shows the same gap for `--help` (64 ms through
  the launcher, 132 ms through click).
- Behaviour: click's bar draws on the thread that calls `update`, which here is the library's
  hashing loop (the `progress` callback of pack, extract, validate), so each redraw would cost
  the work itself; it has no delay, so every quick command would flash a bar; and for one
  library call of unknown length it has no elapsed-time line.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Self, TextIO

DELAY = 1.0  # seconds of work before anything is drawn
INTERVAL = 0.2  # seconds between redraws
WIDTH = 30  # characters of the bar


def wanted(stream: TextIO, quiet: bool) -> bool:
    """Whether progress should be drawn on `stream`."""
    if quiet:
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # unreachable; keeps the return type total


class Progress:
    """`with Progress(stream, "validating", total=bytes, enabled=...) as p: ... p.advance(n)`."""

    def __init__(self, stream: TextIO, label: str, *, total: int | None = None, enabled: bool,
                 delay: float = DELAY) -> None:
        self.stream = stream
        self.label = label
        self.total = total
        self.done = 0
        self.enabled = enabled
        self.delay = delay
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._drawn = False

    def advance(self, n: int) -> None:
        self.done += n

    def update(self, done: int, total: int) -> None:
        """The library's progress callback: (bytes done, bytes in all)."""
        self.done, self.total = done, total

    def line(self, elapsed: float) -> str:
        """The status line for the current state."""
        if self.total:
            frac = min(1.0, self.done / self.total)
            bar = "#" * int(frac * WIDTH)
            return (f"{self.label} [{bar:<{WIDTH}}] {frac * 100:3.0f}% "
                    f"{_size(self.done)}/{_size(self.total)} {elapsed:.0f}s")
        return f"{self.label} ... {elapsed:.0f}s"

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while True:
            self.stream.write("\r" + self.line(time.monotonic() - self._start) + "\x1b[K")
            self.stream.flush()
            self._drawn = True
            if self._stop.wait(INTERVAL):
                return

    def __enter__(self) -> Self:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="fatpte-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._drawn:
            self.stream.write("\r\x1b[K")  # leave the terminal as it was for what follows
            self.stream.flush()
