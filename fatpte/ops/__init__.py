"""Operations on containers, each a library function with explicit arguments that the command line
calls: `packing` (pack, with `specialization`, `named_data` planning and `pack_manifest`;
`pack_policy`, what each thing given to pack becomes, shared with `fatpte pack`),
`packfile` (pack.toml), `thinning`, `extraction`, `edit` (add, remove, replace, convert), `diff`,
`unpack`, `coverage`, `info`, `validation` (`fatpte.validate`), `verdicts` (the verdict store
loaders keep: read, listed, cleared), `receipts` (what loaders report, against the plan); `golden` (golden calls recorded at
pack time) and `check` (`fatpte check`: every entry run on its golden calls by a `runner`, this
machine's fatpte-run or one under qemu, whose `--json` report `run_report` holds to its schema;
`check_matrix` the CPUs of `--cpus`, `check_shards` the slices of `--shard`, `check_merge` the
shards joined, `check_schema` the shape of check's own report), with `golden_warnings` (calls that
cannot discriminate, E0712) and `golden_adequacy` (`check --mutants`: the known-wrong variants of
`mutants` the calls must reject) and `check_program` (`check` of a .pte: each fat delegate's
container); and the ExecuTorch ones:
`program_entry` (a program's record and the checks every write path and validate make),
`pte_specialize` (a .pte as a specialization), `fat_delegate` (fat delegates inside a .pte,
and how deep they nest), `fat_merge` (a fat program authored from lowered programs, no torch),
`fat_lowering` (lowering a model to fat delegates with ExecuTorch's toolchain, imported only when
called: fatpte does not depend on `executorch`), `ptd_export` (an entry's named data as a .ptd)
and `ptn_export` (an entry as a .ptn package); and `signing` (`sign`, `verify`, `unsign`, a
package of its own rooms, over the `cryptography` package) and `verify_remote` (verify of a
container at a URL, fetching only what the check reads).

May use: fatpte.executorch, fatpte.device, fatpte.container, fatpte.manifest, fatpte.format,
fatpte.value, fatpte.fileio, fatpte.errors.
"""
