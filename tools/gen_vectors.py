"""Write the conformance vectors of specs/vectors/ and their index (tests/support/vectors.py).

    python tools/gen_vectors.py            # rewrite specs/vectors/
    python tools/gen_vectors.py --out DIR  # write elsewhere

The generator and the builders it is made of live in the test-support package, which tests, fuzz
targets and the bench import; this file is only the command that runs it.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.vectors import main  # after the repository root is on the path

if __name__ == "__main__":
    sys.exit(main())
