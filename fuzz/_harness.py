"""What every fuzz target shares: coverage instrumentation of fatpte, and the libFuzzer driver.

A target module defines `test_one_input(data: bytes) -> None`, which must return normally or
raise `FatpteError`, and never imports fatpte at module level: fatpte is imported here, under
`atheris.instrument_imports`, so that every module's branches feed the fuzzer's coverage. The
replay driver (fuzz/replay.py) calls the same function without atheris.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Every module that parses or interprets container bytes. Imported eagerly because modules that
# fatpte imports lazily (inside functions) would otherwise load uninstrumented.
PARSING_MODULES = (
    "fatpte.errors", "fatpte.fileio.checksum", "fatpte.fileio.mapping", "fatpte.format.layout",
    "fatpte.format.model", "fatpte.format.codec", "fatpte.format.structure", "fatpte.format.vocabulary",
    "fatpte.manifest.model", "fatpte.manifest.codec", "fatpte.manifest.rules",
    "fatpte.container.reader", "fatpte.container.integrity", "fatpte.container.validation",
    "fatpte.device.fields", "fatpte.device.accelerator", "fatpte.device.profile", "fatpte.device.selection",
    "fatpte.ops.named_data",
    "fatpte.executorch.flatbuf", "fatpte.executorch.pte", "fatpte.executorch.ptd", "fatpte.executorch.nptg",
    "fatpte.executorch.xnnpack", "fatpte.executorch.describe", "fatpte.executorch.signature",
    "fatpte.ops.fat_delegate", "fatpte.executorch.rewrite",
    "fatpte.fileio.strict_json", "fatpte.manifest.canonical", "fatpte.ops.signing.keys", "fatpte.ops.signing.bundle",
    "fatpte.ops.signing.statement", "fatpte.ops.signing.verification", "fatpte.ops.golden",
)


def load_fatpte() -> None:
    for name in PARSING_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a module that exists but fails to import is a real error
                raise


def driven(*strategies: Any) -> Callable[[Callable[..., None]], Callable[[bytes], Any]]:
    """Decorate a property of values drawn from Hypothesis `strategies`: the result takes the
    fuzzer's bytes as Hypothesis' choice sequence (`fuzz_one_input`), so the bytes drive the
    generators instead of being the input. Warnings the generators cause (pack's notes on ties)
    are not printed."""

    def wrap(prop: Callable[..., None]) -> Callable[[bytes], Any]:
        import warnings

        from hypothesis import HealthCheck, given, settings

        run = settings(database=None, deadline=None, suppress_health_check=list(HealthCheck))(given(*strategies)(prop))
        fuzz_one_input: Callable[[bytes], Any] = run.hypothesis.fuzz_one_input  # type: ignore[attr-defined]

        def quiet(data: bytes) -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return fuzz_one_input(data)

        return quiet

    return wrap


def fuzz(test_one_input: Callable[[bytes], None],
         custom_mutator: Callable[[bytes, int, int], bytes] | None = None) -> None:
    """Run `test_one_input` under libFuzzer with the arguments of this process; with
    `custom_mutator(data, max_size, seed)`, libFuzzer mutates through it (a structure-aware
    target)."""
    import atheris  # type: ignore[import-untyped]

    with atheris.instrument_imports(include=["fatpte"]):
        load_fatpte()
    if custom_mutator is None:
        atheris.Setup(sys.argv, test_one_input)
    else:
        atheris.Setup(sys.argv, test_one_input, custom_mutator=custom_mutator)
    atheris.Fuzz()
