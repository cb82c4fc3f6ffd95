"""Where things are, for tests in any folder of tests/."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository
FIXTURES = ROOT / "tests" / "fixtures"
ET_FIXTURES = FIXTURES / "executorch"  # made by `make test-executorch`
