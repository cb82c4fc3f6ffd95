"""What Linux tells of the machine beyond its CPU features (specs/device-profile.md section 9,
"Identity"): the CPU's cores from /proc/cpuinfo (aarch64: MIDR implementer and part, else the MIDR
of /sys; x86_64: vendor, family and model), named by the core table of fatpte.format.vocabulary;
the distribution of /etc/os-release; the device tree's model and compatible strings; the values
of /sys/devices/soc0. The C++ loader (loader/src/device/identity.cpp) takes the same steps.

Every file is read with a bound and as bytes (each byte one character), and every value is kept
only when it has the shape the profile allows, so both languages report the same facts. Each
parser takes the text it reads, so tests feed recorded samples; only `identity` touches files.
"""

from __future__ import annotations

import os
import re
from typing import Final, NamedTuple

from fatpte.format.vocabulary import CORE_BY_ID

MAX_CORES: Final = 64  # distinct core designs listed; a real part has at most 4
MAX_SOC_WORDS: Final = 64
MAX_CPUS: Final = 1024  # /sys/devices/system/cpu/cpuN read for the MIDR fallback
CPUINFO_BYTES: Final = 4 << 20  # as probe_linux reads it
SMALL_FILE_BYTES: Final = 64 << 10  # os-release, device-tree properties, soc0 values
IDENTITY_TEXT: Final = r"[ -~]{1,256}"  # kernel, os_release, machine, each soc word
_WORD: Final = re.compile(r"[A-Za-z0-9._~-]{1,64}")
_HEX: Final = re.compile(r"0x[0-9a-fA-F]{1,16}")
_DECIMAL: Final = re.compile(r"0|[1-9][0-9]{0,5}")
_VENDOR: Final = re.compile(r"[A-Za-z0-9]{1,16}")
_CPUINFO_KEYS: Final = {"aarch64": ("CPU implementer", "CPU part"), "x86_64": ("vendor_id", "cpu family", "model")}


class Identity(NamedTuple):
    """What the files said; None where they said nothing usable."""

    cpu_cores: frozenset[str] | None = None
    os_release: str | None = None
    machine: str | None = None
    soc: frozenset[str] | None = None


def core_word(core_id: str) -> str:
    """A core's word: its name in the core table, else its id."""
    core = CORE_BY_ID.get(core_id)
    return core.name if core is not None else core_id


def _arm_id(implementer: int, part: int) -> str | None:
    return f"0x{implementer:02x}:0x{part:03x}" if implementer <= 0xFF and part <= 0xFFF else None


def _core_id(arch: str, values: dict[str, str]) -> str | None:
    if arch == "aarch64":
        impl, part = values["CPU implementer"], values["CPU part"]
        if not (_HEX.fullmatch(impl) and _HEX.fullmatch(part)):
            return None
        return _arm_id(int(impl, 16), int(part, 16))
    vendor, family, model = values["vendor_id"], values["cpu family"], values["model"]
    if not (_VENDOR.fullmatch(vendor) and _DECIMAL.fullmatch(family) and _DECIMAL.fullmatch(model)):
        return None
    return f"{vendor}:{family}:{model}"


def cpuinfo_cores(cpuinfo: str, arch: str) -> list[str]:
    """The cores of /proc/cpuinfo text, in the order first seen: each processor's values of the
    architecture's keys (a processor's id is complete when it has all of them), named by the core
    table. A line of another architecture's keys (qemu-user shows the host's file) is ignored."""
    keys = _CPUINFO_KEYS[arch]
    found: dict[str, None] = {}
    values: dict[str, str] = {}
    for line in cpuinfo.split("\n"):
        name, sep, value = line.partition(":")
        name = name.strip(" \t")
        if not sep or name not in keys:
            continue
        values[name] = value.strip(" \t\r")
        if len(values) == len(keys):
            core_id = _core_id(arch, values)
            values = {}
            if core_id is not None and len(found) < MAX_CORES:
                found.setdefault(core_word(core_id))
    return list(found)


def midr_core(text: str) -> str | None:
    """The core of a /sys/.../midr_el1 value (`0x00000000410fd0b1`): implementer bits 31..24, part 15..4."""
    value = text.strip(" \t\r\n")
    if not _HEX.fullmatch(value):
        return None
    midr = int(value, 16)
    core_id = _arm_id(midr >> 24 & 0xFF, midr >> 4 & 0xFFF)
    return None if core_id is None else core_word(core_id)


def os_release_of(text: str) -> str | None:
    """`ID VERSION_ID` of os-release(5) text (the last assignment of each wins, one pair of quotes
    removed), or `ID` alone; None when ID is missing or not a plain word."""
    fields: dict[str, str] = {}
    for line in text.split("\n"):
        key, sep, value = line.partition("=")
        if not sep or key not in ("ID", "VERSION_ID"):
            continue
        value = value.strip(" \t\r")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        fields[key] = value
    ident, version = fields.get("ID", ""), fields.get("VERSION_ID", "")
    if not _WORD.fullmatch(ident):
        return None
    return f"{ident} {version}" if _WORD.fullmatch(version) else ident


def _text(value: str) -> str | None:
    return value if re.fullmatch(IDENTITY_TEXT, value) else None


def _read(path: str, limit: int) -> str | None:
    """At most `limit` bytes of the file, each byte one character; None when it cannot be opened.
    Opened without waiting (a FIFO in its place gives what it has, as in C++)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    chunks: list[bytes] = []
    size = 0
    try:
        while size < limit:
            chunk = os.read(fd, min(limit - size, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        pass  # what was read stands, as the C++ reader keeps it
    finally:
        os.close(fd)
    return b"".join(chunks).decode("latin-1")


def _arm_sysfs_cores(root: str) -> list[str]:
    found: dict[str, None] = {}
    for n in range(MAX_CPUS):
        cpu = os.path.join(root, "sys", "devices", "system", "cpu", f"cpu{n}")
        if not os.path.isdir(cpu):
            break
        text = _read(os.path.join(cpu, "regs", "identification", "midr_el1"), 64)
        core = None if text is None else midr_core(text)
        if core is not None and len(found) < MAX_CORES:
            found.setdefault(core)
    return list(found)


def _soc_words(root: str) -> list[str]:
    words: dict[str, None] = {}
    compatible = _read(os.path.join(root, "proc", "device-tree", "compatible"), SMALL_FILE_BYTES) or ""
    values = [w.strip(" \t\n") for w in compatible.split("\0")]
    for name in ("machine", "family", "soc_id"):
        text = _read(os.path.join(root, "sys", "devices", "soc0", name), SMALL_FILE_BYTES)
        if text is not None:
            values.append(text.split("\n")[0].strip(" \t\r"))
    for value in values:
        if _text(value) is not None and len(words) < MAX_SOC_WORDS:
            words.setdefault(value)
    return list(words)


def identity(arch: str, *, root: str = "/", cpuinfo: str | None = None) -> Identity:
    """The identity facts of the Linux machine at `root` (tests give a folder standing for /);
    `cpuinfo` is /proc/cpuinfo's text when the caller already read it."""
    if cpuinfo is None:
        cpuinfo = _read(os.path.join(root, "proc", "cpuinfo"), CPUINFO_BYTES)
    cores = cpuinfo_cores(cpuinfo or "", arch)
    if not cores and arch == "aarch64":
        cores = _arm_sysfs_cores(root)
    release = _read(os.path.join(root, "etc", "os-release"), SMALL_FILE_BYTES)
    if release is None:
        release = _read(os.path.join(root, "usr", "lib", "os-release"), SMALL_FILE_BYTES)
    model = _read(os.path.join(root, "proc", "device-tree", "model"), SMALL_FILE_BYTES)
    machine = None if model is None else _text(model.split("\0")[0].strip(" \t\n"))
    soc = _soc_words(root)
    return Identity(cpu_cores=frozenset(cores) or None, os_release=None if release is None else os_release_of(release),
                    machine=machine, soc=frozenset(soc) or None)


def kernel_release() -> str | None:
    """uname's release (`6.8.0-45-generic`) when it is printable ASCII; None without uname."""
    if not hasattr(os, "uname"):
        return None
    return _text(os.uname().release)
