"""Test support: what tests, fuzz targets and the bench build their inputs with, one package.

- `tests.support.vectors`: the conformance vectors of specs/vectors/ (written by
  `python tools/gen_vectors.py`, a thin entry point over `vectors.main`) and the builders they are
  made of (`packed`, `signed`, `with_bundle`, `reseal`, `ManifestWriter`, the test keys, ...).
- `tests.support.hostile`: hostile inputs of the shapes issues 15, 33 and 42 found, at any scale.

Imported as `from tests.support import vectors` (the repository root is on the path: pytest's
`pythonpath`, the fuzz targets and `python -m bench` all run from it). Linted with the package
(`make lint`: ruff and mypy over tests/support)."""
