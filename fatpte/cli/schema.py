"""The documented fields of every --json output of the command line.

These are a stable interface: scripts parse them. docs/cli.md is generated from this table
(tools/gen_cli_docs.py) and tests/cli/test_cli_docs.py checks that each command's real output has
exactly these fields, so the documentation and the output cannot drift apart. A field may be
added in a minor release; none is renamed or removed.
"""

from __future__ import annotations

from typing import Final

# Per output: (title, [(field, meaning)]). Keys name the object, e.g. "info.entries[]".
JSON_FIELDS: Final[dict[str, tuple[str, list[tuple[str, str]]]]] = {
    "info": ("`fatpte info --json`: one object", [
        ("path", "the file, as given; a URL's `user:password@` is shown as `***@`, a credential query parameter's value (`X-Amz-Signature`, `sig`, `token`, ...) as `***`"),
        ("version", "container version, 1 or 2"),
        ("size", "container size in bytes"),
        ("entry_count", "number of entries"),
        ("segment_count", "number of named-data segments (0 in version 1)"),
        ("manifest", "true when the container has a manifest"),
        ("payload_bytes", "sum of the entries' payload sizes"),
        ("payload_bytes_stored", "bytes the payloads occupy, identical payloads counted once"),
        ("entries", "list of entry objects, in table order (below)"),
        ("segments", "list of segment objects, in table order (below)"),
        ("named_data", "list of named-data key objects, sorted by key (below)"),
        ("named_data_bytes", "sum of the sizes of every key's data, as if each key were stored alone"),
        ("named_data_bytes_stored", "bytes the segments occupy: the difference is what sharing saved"),
        ("map", "only with --map: list of region objects in file order (below)"),
    ]),
    "info.entries[]": ("An entry of `info`", [
        ("index", "position in the entry table"),
        ("name", "entry name (version 1: the backend id)"),
        ("backend_id", "backend id"),
        ("offset", "absolute offset of the payload"),
        ("size", "payload size in bytes"),
        ("payload_kind", "bytes 4..8 of the payload as text, `-` when none, `0x...` when not printable"),
        ("alignment", "payload alignment (version 1: 1)"),
        ("checksum", "payload CRC32C as 8 hex digits, null in version 1"),
        ("priority", "selection priority (version 1: 0)"),
        ("flags", "entry flags"),
        ("shared_with", "names of the other entries stored at the same bytes, the first 8 in table order"),
        ("shared_count", "how many other entries are stored at the same bytes"),
        ("requires", ("the requirements, in the form of pack.toml's `requires` (docs/pack-toml.md); "
                     "{} when none")),
        ("requires_text", "the requirements in one short line, e.g. `arch=x86_64, +avx2+fma`; `-` when none"),
        ("named_data", "the named-data keys the entry uses"),
        ("needs_data_file", ("true when the entry uses named data that its extracted payload loads from a data "
                             "file beside it (`extract --data-out`); false for a .ptn, whose tensors extract "
                             "puts back into the package")),
        ("signature", "the program signature {methods: [{name, inputs, outputs, buffers}]}, null when none"),
        ("executorch_backends", ("the ExecuTorch backend ids the payload needs registered, as the manifest "
                                 "records them (revision 2), else derived from the payload: its delegates', "
                                 "sorted ([] for portable kernels only; `NativeBackend` for a .ptn); null when "
                                 "not recorded and the payload is no ExecuTorch program or package")),
        ("source_digest", "`<algorithm>:<hex>` of the source program, null when none"),
        ("payload_sha256", "the payload's SHA-256 the manifest records (hex), null when none"),
        ("provenance", ("the manifest's provenance pairs: e.g. `executorch.pte.sha256` (the input file), "
                        "`executorch.pte.named_data` = `shared` (the program was rewritten); {} when none")),
        ("signature_check", ("null, or the decision the packer recorded about the program signature "
                             "(provenance `fatpte.signature_check`): `skipped` (no signature stored or "
                             "checked) or `from:NAME` (every entry states entry NAME's)")),
        ("golden", ("the entry's golden calls (docs/golden.md): `[{\"method\", \"inputs\": [keys], \"outputs\": "
                    "[{\"key\", \"atol\", \"rtol\"}]}]`; [] when none")),
    ]),
    "info.named_data[]": ("A named-data key of `info`", [
        ("key", "the key"),
        ("segment", "index of the segment holding its bytes"),
        ("size", "size of those bytes, null when the segment index is out of range"),
        ("alias_of", "the first key (by key order) stored in the same segment, or null"),
    ]),
    "info.segments[]": ("A named-data segment of `info`", [
        ("index", "position in the segment table"),
        ("offset", "absolute offset"),
        ("size", "size in bytes"),
        ("alignment", "alignment"),
        ("checksum", "CRC32C as 8 hex digits"),
    ]),
    "info.map[]": ("A region of `info --map`", [
        ("start", "first byte"),
        ("end", "one past the last byte"),
        ("size", "end - start"),
        ("kind", ("header, entry_table, segment_table, manifest, payload, segment, padding (v2: bytes "
                  "between regions, zero) or unclaimed (v1: gaps and trailing bytes)")),
        ("label", "what the region is, e.g. `payload of 'cpu', 'cpu-copy'`"),
    ]),
    "info.executorch": (("`fatpte info --json` on an ExecuTorch file: one object "
                        "(`fatpte.executorch.describe(FILE).to_json()`, docs/executorch.md)"), [
        ("kind", ("`pte` (program), `ptd` (data file), `ptn` (native package), `nptg` (native payload) or "
                  "`xnnpack` (XH00/XN01 payload)")),
        ("source", "the file, as given"),
        ("size", "file size in bytes"),
        ("version", "the file's schema version"),
        ("extended_header", ("pte: the eh00 header {length, program_size, segment_base_offset, "
                            "segment_data_size}, or null")),
        ("methods", ("pte: method objects (below); nptg: per method its inputs, outputs, buffers, "
                    "output_specs, named_data_keys")),
        ("signature", ("pte, ptn: the program signature {methods: [{name, inputs, outputs, buffers}]}: buffer "
                      "write-backs are among `buffers`, never `outputs`")),
        ("executorch_backends", "pte: the backend ids its delegates need registered, sorted ([]: portable kernels only)"),
        ("external_keys", ("pte: the named-data keys it loads (external constants, delegate constants) that it does "
                           "not hold: a .ptd beside it must")),
        ("members", "ptn: the zip's members [{name, offset, size, crc32}], offset of the member's bytes"),
        ("program", "ptn: program.ptg, as `info` describes an `nptg` file (format, version, methods, named_data_keys)"),
        ("tensors", ("ptn: [{key, dtype, shape, offset, size, alias_of}] of program.safetensors and aliases.json; "
                     "an alias has its owner's offset and size")),
        ("missing_keys", "ptn: keys the program loads that the package does not hold"),
        ("metadata", "ptn: the safetensors header's __metadata__"),
        ("segments", "pte, ptd: [{offset, size}] in the file (pte: with `index`)"),
        ("named_data", "pte, ptd: [{key, segment_index, offset, size}] (ptd: with dtype and shape)"),
        ("constant_buffers", "pte: number of inline constant buffers"),
        ("constant_segment", "pte: {segment_index, tensors} of the constant segment, or null"),
        ("mutable_data_segments", "pte: [{segment_index, tensors}]"),
        ("header", "ptd: the FH01 header; xnnpack: the XH00 header or null"),
        ("format", "nptg: `NPTG`; xnnpack: `XH00` or `XN01`"),
        ("named_data_keys", "nptg, xnnpack: the named-data keys the payload loads"),
        ("nodes", "xnnpack: number of graph nodes"),
        ("values", "xnnpack: number of graph values"),
        ("num_externs", "xnnpack: number of external values"),
        ("input_ids", "xnnpack: value ids of the graph inputs"),
        ("output_ids", "xnnpack: value ids of the graph outputs"),
        ("constants", "xnnpack: [{index, offset, size, named_key}]"),
    ]),
    "info.executorch.methods[]": ("A method of `info` on a .pte", [
        ("name", "method name"),
        ("values", "number of values in the execution plan"),
        ("inputs", "value indices of the plan's inputs"),
        ("outputs", "value indices of the plan's outputs"),
        ("operators", "operator names, `aten::add.out`"),
        ("instructions", "number of kernel and delegate calls"),
        ("delegates", "delegate objects (below)"),
    ]),
    "info.executorch.methods[].delegates[]": ("A delegate of a method of `info` on a .pte", [
        ("index", "position in the method's delegate list"),
        ("backend_id", "the backend id ExecuTorch records, e.g. `XnnpackBackend`"),
        ("location", "`inline` (in the flatbuffer) or `segment`"),
        ("data_index", "index of the inline buffer or segment"),
        ("offset", "absolute offset of the payload in the file"),
        ("size", "payload size in bytes"),
        ("compile_specs", "key -> value as hex"),
        ("payload_kind", "`NFAT`, or bytes 4..8 of the payload as text (`NPTG`, `XH00`), `-` when none"),
        ("payload", ("only for NFAT, NPTG and XNNPACK payloads: what is inside (NFAT: its entries with name, "
                    "backend_id, payload_kind, offset, size, priority, requires (one line), signature, named_data, "
                    "provenance, each NPTG or XNNPACK payload described)")),
    ]),
    "validate": ("`fatpte validate --json`: one object per file, one per line (JSON Lines)", [
        ("path", "the file; a URL's `user:password@` is shown as `***@`, a credential query parameter's value as `***`"),
        ("ok", "true when the file has no error (warnings allowed)"),
        ("valid", "what the exit code counts: ok, and with --strict no warning either"),
        ("version", "container version, null when the header is unreadable"),
        ("size", "file size in bytes, null when the file cannot be read"),
        ("findings", "list of finding objects (below): at most 100 of each code"),
        ("omitted", "code -> how many more findings of that code there are, not listed; {} when none"),
    ]),
    "validate.findings[]": ("A finding of `validate`", [
        ("code", "the error code, e.g. `E0203` (specs/nfat.md section 7)"),
        ("name", "the code's name, e.g. `PAYLOAD_OUT_OF_BOUNDS`"),
        ("severity", "`error` or `warning`"),
        ("offset", "byte offset of the field at fault, or null"),
        ("field", "field path, e.g. `entries[2].size`, or null"),
        ("message", "what is wrong, in words"),
        ("expected", "the value the rule wants, or null"),
        ("actual", "the value found, or null"),
    ]),
    "select": ("`fatpte select --json`: one object (`fatpte.Selection.to_json`)", [
        ("device", "the device profile's name (`host` for this machine)"),
        ("chosen", "name of the chosen entry; null when no entry fits (the command then exits 3, the error on stderr)"),
        ("prefer", "the --prefer words, in order"),
        ("exclude", "the --exclude words"),
        ("verdicts", "one verdict object per entry, in table order (below)"),
    ]),
    "select.verdicts[]": ("A verdict of `select`", [
        ("entry", "entry name"),
        ("backend_id", "backend id"),
        ("eligible", "true when every requirement holds and the entry is not excluded"),
        ("rank", "1 for the chosen entry, 2 for the next, ...; null when not eligible"),
        ("grade", ("how an eligible entry fits: `exact` (it names the device's cores or SoC), `compatible` (CPU "
                   "features or accelerators), `fallback` (nothing of the hardware); null when not eligible "
                   "(specs/nfat-manifest.md 6.3)")),
        ("priority", "the entry's priority"),
        ("specificity", "number of requirements the entry states"),
        ("executorch_backends", ("the ExecuTorch backends the entry's program needs (manifest `executorch_backends`); "
                                 "[] for portable operators; null when not known")),
        ("failures", "each failed requirement: {requirement, needed, has}"),
        ("notes", ("what could not be checked from the profile, e.g. a backend ABI or the ExecuTorch backends "
                   "it does not list")),
    ]),
    "select.pte": ("`fatpte select --json` on an ExecuTorch program with NFAT delegates: one object", [
        ("path", "the file, as given"),
        ("delegates", ("one object per NFAT delegate, in program order: `index`, `backend_id`, `offset` "
                      "(of its payload), then the fields of `select` above")),
    ]),
    "device": (("`fatpte device --json`, `fatpte device show --json`: the canonical profile "
                "(specs/device-profile.md); `device list --json` prints a list of them"), [
        ("name", "profile name; `host` for this machine"),
        ("os", "linux, android, macos, ios or windows"),
        ("arch", "x86_64 or aarch64"),
        ("cpu_features", "sorted list of CPU features"),
        ("accelerators", "list of {kind, name, version, memory_bytes}"),
        ("memory_bytes", "physical memory"),
        ("backends", "backend id -> ABI version the device runtime provides (keys sorted)"),
        ("executorch_backends", ("sorted ExecuTorch backend ids registered in the device's runtime; the key is "
                                 "absent when not known (`fatpte device` fills it when it finds the runtime: "
                                 "fatpte-run, or ExecuTorch's Python runtime)")),
        ("cpu_cores", ("sorted core designs (specs/device-profile.md 3.6: `cortex-a76`, `znver4`, or the id of a "
                       "core the table does not name); absent when not known")),
        ("kernel", "the kernel release (`uname -r`); absent when not known"),
        ("os_release", "the distribution, `ID VERSION_ID` of /etc/os-release (`debian 12`); absent when not known"),
        ("machine", "the machine model (/proc/device-tree/model); absent when not known"),
        ("soc", "sorted SoC words (device-tree compatible strings, /sys/devices/soc0 values); absent when not known"),
    ]),
    "coverage": ("`fatpte coverage --json`: one object", [
        ("path", "the container; a URL's `user:password@` is shown as `***@`, a credential query parameter's value as `***`"),
        ("size", "its size in bytes"),
        ("devices", "one object per device profile, in the order given (below)"),
        ("uncovered", "names of the devices no entry fits"),
        ("unused_entries", "names of the entries no device gets"),
    ]),
    "coverage.devices[]": ("A device of `coverage`", [
        ("device", "profile name"),
        ("entry", "the entry it gets, or null"),
        ("backend_id", "that entry's backend id, or null"),
        ("reason", "when no entry fits: every entry and why (the `select` error), else null"),
        ("download_bytes", "size of the container `fatpte thin --only-chosen` writes for the device, or null"),
    ]),
    "unpack": ("`fatpte unpack --json`: one object", [
        ("directory", "the directory written"),
        ("pack_toml", "its pack.toml"),
        ("payload_files", "number of payload files (entries sharing bytes share a file)"),
        ("named_data_files", "number of named-data files (aliases share a file)"),
        ("reproducible", ("true when `pack --from` writes the same bytes, false when not, null with "
                         "--no-verify")),
    ]),
    "diff": ("`fatpte diff --json`: one object", [
        ("a", "the first file"),
        ("b", "the second file"),
        ("version", "{old, new} container versions"),
        ("size", "{old, new, delta} container sizes in bytes"),
        ("added", ("entries only in B: {name, backend_id, size, checksum, payload_kind, alignment, priority, "
                   "requires, signature, named_data, source_digest, payload_sha256}")),
        ("removed", "entries only in A, same fields"),
        ("changed", "entries in both that differ: {name, fields: {field: {old, new}}}"),
        ("reordered", "true when the common entries are in a different order"),
        ("named_data", ("{added, removed, changed} named-data keys: {key, size, checksum}, changed as "
                        "{key, fields: {field: {old, new}}}")),
        ("unchanged", "true when no entry was added, removed, changed or moved and the version is the same"),
    ]),
}
