"""Devices and choosing for them: profile field rules (`fields`), `accelerator`, the host probes
(`probe_linux`, `probe_identity` (cores, distribution, machine, SoC), `probe_macos`, `probe_cuda`,
`probe_openvino`, gathered by `host`, which finds vendor runtimes such as OpenVINO's through
`vendor_runtimes`; `probe_executorch`, ExecuTorch's
registered backends, asked by `profile` on request), `fatpte_run` (the one room that finds and
drives fatpte-run and reads its report, held to its schema by `run_report`), `runtime_wheel` (the
fatpte-runs of other architectures unpacked from fatpte's platform wheels), `profile` (DeviceProfile: JSON, named
profiles, the host's profile built from the probes) and `selection`, a pure function of a
container's metadata, a profile and the caller's preferences.

Within the package: fields < accelerator < run_report < fatpte_run, runtime_wheel, vendor_runtimes < probe_* < host
< profile < selection.
May use: fatpte.container, fatpte.manifest, fatpte.format, fatpte.fileio, fatpte.errors.
"""
