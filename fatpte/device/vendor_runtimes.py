"""Vendor runtimes: the libraries an accelerator vendor ships apart from ExecuTorch (OpenVINO's C
runtime, libopenvino_c), which an ExecuTorch backend library opens at run time and which some
machines have and others do not. One table row per runtime says where users install it; `locate`
is the one search (specs/device-profile.md 9.1, "Vendor runtimes"; C++: loader/src/vendor/,
which has the same rows and follows the same order).

Adding a runtime is adding a row here and in loader/src/vendor/runtimes.cpp, and a probe of its
devices (fatpte/device/probe_openvino.py is OpenVINO's) to fatpte.device.host's table.

Also the one rule for a name a driver reports (`printable_name`): printable ASCII, at most 256.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping
from typing import Final, NamedTuple

MAX_NAME_LENGTH: Final = 256
MAX_FOLDER_NAMES: Final = 4096  # a folder listing is bounded like any other input


class VendorRuntime(NamedTuple):
    name: str  # the word of `--vendor-runtime NAME=PATH`
    title: str  # how reasons name it
    env: str  # the variable that holds the library's path
    package: str  # the Python package that ships it
    package_dir: str  # its folder in the package
    file_prefix: str  # the versioned file there (then any version)
    system_name: str  # what dlopen's own search is asked for
    backend_id: str  # the ExecuTorch backend that opens it
    backend_env: str  # the variable that backend reads the path from, once a process


# ExecuTorch's OpenvinoBackend (backends/openvino/runtime/OpenvinoBackend.cpp) dlopens
# $OPENVINO_LIB_PATH, else "libopenvino_c.so", once a process.
VENDOR_RUNTIMES: Final = (
    VendorRuntime(name="openvino", title="OpenVINO", env="OPENVINO_LIB_PATH", package="openvino",
                  package_dir="libs", file_prefix="libopenvino_c.so.", system_name="libopenvino_c.so",
                  backend_id="OpenvinoBackend", backend_env="OPENVINO_LIB_PATH"),
)


class Located(NamedTuple):
    """Where a runtime was found (`path`, `source`), or every place looked. (NamedTuples, not
    dataclasses: `--device host` imports this, and the read path keeps dataclasses out,
    tests/cli/test_startup_imports.py.)"""

    path: str = ""
    source: str = ""
    looked: tuple[str, ...] = ()
    withheld: bool = False

    def text(self) -> str:
        """"found at P (from OPENVINO_LIB_PATH)" or "not found; looked: 1. ..., 2. ..."."""
        if self.path:
            return f"found at {self.path} (from {self.source})"
        return "not found; looked: " + ", ".join(f"{i}. {w}" for i, w in enumerate(self.looked, 1))


def runtime_named(name: str) -> VendorRuntime | None:
    return next((r for r in VENDOR_RUNTIMES if r.name == name), None)


def parse_assignment(text: str) -> tuple[str, str] | None:
    """"NAME=PATH" (or "NAME=", withholding) as (name, path); None when NAME is no vendor runtime."""
    name, eq, path = text.partition("=")
    return (name, path) if eq and runtime_named(name) is not None else None


def locate(runtime: VendorRuntime, explicit: Mapping[str, str] | None = None,
           environ: Mapping[str, str] | None = None) -> Located:
    """The search, in order: the caller's path (`explicit[name]`; "" withholds), the runtime's
    variable, the package in $VIRTUAL_ENV, then $CONDA_PREFIX, then in this Python's own
    site-packages, then dlopen's own search of `system_name` (which leaves it loaded)."""
    env = os.environ if environ is None else environ
    looked: list[str] = []
    given = (explicit or {}).get(runtime.name)
    if given == "":
        return Located(withheld=True)
    if given is not None:
        if os.path.isfile(given):
            return Located(given, f"the caller's path for {runtime.name}")
        looked.append(f"the caller's path {given} (not a file)")
    else:
        looked.append("the caller's path (none given)")
    value = env.get(runtime.env, "")
    if value and os.path.isfile(value):
        return Located(value, runtime.env)
    looked.append(f"{runtime.env}={value} (not a file)" if value else f"{runtime.env} (not set)")
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = env.get(var, "")
        if not prefix:
            looked.append(f"${var} (not set)")
            continue
        found, why = _in_environment(runtime, prefix)
        if found:
            return Located(found, f"the {runtime.package} package of ${var}")
        looked.append(f"${var}: {why}")
    for site in _own_site_packages():
        found = _in_package_dir(runtime, os.path.join(site, runtime.package, runtime.package_dir))
        if found:
            return Located(found, f"the {runtime.package} package of this Python ({sys.prefix})")
    looked.append(f"this Python's site-packages (no {runtime.package}/{runtime.package_dir}/{runtime.file_prefix}*)")
    try:
        ctypes.CDLL(runtime.system_name)
    except OSError as exc:
        looked.append(f"the system's library search for {runtime.system_name} (dlopen: {exc})")
        return Located(looked=tuple(looked))
    return Located(runtime.system_name, "the system's library search")


def printable_name(raw: bytes, fallback: str) -> str:
    """A name a driver or runtime reports, as printable ASCII ('?' for each other character),
    surrounding spaces removed, at most 256 characters; `fallback` when nothing is left."""
    text = "".join(c if " " <= c <= "~" else "?" for c in raw.decode("utf-8", errors="replace")).strip(" ")
    return text[:MAX_NAME_LENGTH] or fallback


def _names_starting(folder: str, prefix: str) -> list[str]:
    try:
        with os.scandir(folder) as it:
            names = []
            for seen, entry in enumerate(it, 1):
                if seen > MAX_FOLDER_NAMES:
                    break
                if len(entry.name) > len(prefix) and entry.name.startswith(prefix):
                    names.append(entry.name)
    except OSError:
        return []
    return sorted(names, key=lambda n: n.encode())


def _in_package_dir(runtime: VendorRuntime, folder: str) -> str:
    """The last versioned file in bytewise order that is a regular file (a wheel ships one)."""
    for name in reversed(_names_starting(folder, runtime.file_prefix)):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    return ""


def _in_environment(runtime: VendorRuntime, prefix: str) -> tuple[str, str]:
    lib = os.path.join(prefix, "lib")
    for python in _names_starting(lib, "python3."):
        found = _in_package_dir(runtime, os.path.join(lib, python, "site-packages", runtime.package,
                                                      runtime.package_dir))
        if found:
            return found, ""
    return "", f"no {lib}/python3.*/site-packages/{runtime.package}/{runtime.package_dir}/{runtime.file_prefix}*"


def _own_site_packages() -> list[str]:
    import sysconfig

    paths = sysconfig.get_paths()
    return list(dict.fromkeys(p for p in (paths.get("platlib"), paths.get("purelib")) if p))
