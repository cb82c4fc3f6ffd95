"""fatpte's benchmarks: `make bench` (python -m bench) measures every operation of issue 7 against
the baseline it is paired with and writes docs/performance.md.

harness.py owns timing, alternation, peak-memory measurement and the machine description; each
op_*.py module measures one operation; refpacker.py is the v1 in-memory packer the issue compares
against; commands.py turns an operation into a command line (the `fatpte` CLI when installed,
else the library through bench/libcli.py).
"""
