"""`python -m fatpte`: the same command line as the `fatpte` console script."""

import sys

from fatpte.cli.launch import main

sys.exit(main())
