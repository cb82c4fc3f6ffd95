"""The command line: `launch` (the console script; the plain forms of the reading commands run
without click), `main` (the click group and its commands), `options` (what they share),
`pack_commands` (pack and merge), `runtime_commands` (`fatpte runtime`), `verdict_commands`
(`verdicts list|clear`), `commands` (the bodies both share), `check_body` (check's), `exit_codes`,
`render` (text output), `schema` (JSON fields), `progress`, `paths` (validate's file walk) and
`executorch_files` (ExecuTorch files on the command line). This package's __init__ imports
nothing, so the launcher starts without click.

May use: fatpte.ops, fatpte.executorch, fatpte.device, fatpte.container, fatpte.format,
fatpte.fileio, fatpte.errors, fatpte._generated (the help text launch prints) and the public fatpte
API; click (only in `main`, `options`, `pack_commands`, `runtime_commands` and `verdict_commands`).
"""
