"""The command line: `launch` (the console script; the plain forms of the reading commands run
without click), `main` (the click commands), `commands` (the bodies both share), `exit_codes`,
`render` (text output), `schema` (JSON fields), `progress`, `paths` (validate's file walk) and
`executorch_files` (ExecuTorch files on the command line). This package's __init__ imports
nothing, so the launcher starts without click.

May use: everything below it (fatpte.ops and down) and the public fatpte API.
"""
