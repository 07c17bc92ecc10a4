"""What this CPU is: its model, flags and architecture, on Linux, macOS and Windows (chapter 01).

Linux lists the model and flags in ``/proc/cpuinfo`` (:data:`CPUINFO`); elsewhere they come
from torch's own cpuinfo (``torch.cpu.get_capabilities()``), spelled as Linux spells them, and
from the platform. Used by the environment card (:mod:`tricks_helpers.env.card`), the
precision checks (:mod:`tricks_helpers.env.precision`) and the workshop's machine records.
"""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path

import torch

from tricks_helpers._checks import check_type

__all__ = ["CPUINFO", "cpu_model", "cpu_flags", "cpu_arch", "mps_available"]

#: Where Linux lists the CPU's model and flags (absent on macOS and Windows).
CPUINFO = Path("/proc/cpuinfo")

# torch.cpu.get_capabilities() spells a few x86 flags with an underscore the kernel's
# /proc/cpuinfo does not have; the machine records use the kernel's spelling.
_TORCH_FLAG_NAMES = {
    "avx512_f": "avx512f",
    "avx512_cd": "avx512cd",
    "avx512_dq": "avx512dq",
    "avx512_bw": "avx512bw",
    "avx512_vl": "avx512vl",
    "fma3": "fma",
}
# platform.machine() names of one architecture, as this book names it.
_ARCH_NAMES = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "x64": "x86_64",
    "i386": "x86",
    "i686": "x86",
    "x86": "x86",
    "arm64": "arm64",
    "aarch64": "arm64",
    "arm64e": "arm64",
}


def _torch_capabilities() -> dict:
    """``torch.cpu.get_capabilities()`` as a dict; empty on a torch without it."""
    get_capabilities = getattr(getattr(torch, "cpu", None), "get_capabilities", None)
    if get_capabilities is None:
        return {}
    try:
        return dict(get_capabilities())
    except RuntimeError:  # cpuinfo failed to initialise
        return {}


def _cpuinfo_fields(cpuinfo: str | Path | None) -> list[tuple[str, str]]:
    """``(key, value)`` of each ``key : value`` line of ``cpuinfo`` (default :data:`CPUINFO`),
    first processor first; none where the file cannot be read."""
    try:
        text = Path(CPUINFO if cpuinfo is None else cpuinfo).read_text(
            encoding="utf-8", errors="replace"
        )
    except OSError:
        return []
    return [(k.strip(), v) for k, _, v in (line.partition(":") for line in text.splitlines())]


def cpu_flags(cpuinfo: str | Path | None = None, *, torch_fallback: bool = True) -> frozenset[str]:
    """Return the CPU feature flags of the first processor listed in ``cpuinfo``.

    Where the file does not exist or lists no flags (macOS, Windows), the flags come from
    ``torch.cpu.get_capabilities()`` (cpuinfo, what torch's own kernels dispatch on), spelled
    as Linux spells them (``avx512f``, not ``avx512_f``), so an Apple-silicon Mac reports its
    Arm features (``bf16``, ``i8mm``, ``sme``) and a Windows PC its AVX flags (issue 31).

    Args:
        cpuinfo: the file to read (default :data:`CPUINFO`, Linux's ``/proc/cpuinfo``).
        torch_fallback: ask torch where the file gives no flags; ``False`` returns an empty
            set there instead.
    """
    for key, value in _cpuinfo_fields(cpuinfo):
        if key in ("flags", "Features") and value.split():
            return frozenset(value.split())
    if not torch_fallback:
        return frozenset()
    return frozenset(
        _TORCH_FLAG_NAMES.get(name, name)
        for name, value in _torch_capabilities().items()
        if value is True
    )


def cpu_arch(machine: str | None = None) -> str:
    """This CPU's architecture: ``x86_64``, ``x86``, ``arm64``, or what the platform says.

    ``platform.machine()`` spells one architecture several ways (``AMD64`` on Windows,
    ``aarch64`` on Linux, ``arm64`` on macOS); this gives one name per architecture, lower
    case. Where the platform says nothing, torch's ``architecture`` capability is asked.

    Args:
        machine: a ``platform.machine()`` value to name (default: this machine's).
    """
    if machine is not None:
        check_type("cpu_arch", "machine", machine, str)
    else:
        machine = platform.machine() or str(_torch_capabilities().get("architecture", ""))
    name = machine.strip().lower()
    return _ARCH_NAMES.get(name, name) or "unknown"


def _darwin_brand() -> str | None:
    """macOS's CPU name (``sysctl -n machdep.cpu.brand_string``: ``Apple M2``); None elsewhere."""
    if platform.system() != "Darwin":
        return None
    try:
        done = subprocess.run(
            ["sysctl", "-n", "machdep.cpu.brand_string"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    brand = done.stdout.strip()
    return brand if done.returncode == 0 and brand else None


def cpu_model(cpuinfo: str | Path | None = None) -> str:
    """Return a readable CPU model name.

    In order: ``model name`` in ``cpuinfo`` (default :data:`CPUINFO`; Linux on x86); on macOS
    ``sysctl -n machdep.cpu.brand_string`` (``Apple M2``); torch's ``cpu_name`` capability
    (cpuinfo: Linux on Arm, Windows); ``platform.processor()``; ``platform.machine()``;
    ``"unknown CPU"``.
    """
    for key, value in _cpuinfo_fields(cpuinfo):
        if key == "model name" and value.strip():
            return value.strip()
    torch_name = str(_torch_capabilities().get("cpu_name") or "").strip()
    return (
        _darwin_brand()
        or (torch_name if torch_name.lower() not in ("", "unknown") else "")
        or platform.processor()
        or platform.machine()
        or "unknown CPU"
    )


def mps_available() -> bool:
    """True where torch can use an Apple GPU through Metal (``torch.backends.mps``)."""
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())
