"""`python -m fatpte`: the same command line as the `fatpte` console script."""

from fatpte.cli import main

main(prog_name="fatpte")
