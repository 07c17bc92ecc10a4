"""Which low-precision math this device does natively: bfloat16 and autocast (chapters 04, 07).

A CPU without ``avx512_bf16``/``amx_bf16`` (or Arm's ``bf16``) runs bfloat16 through float32:
autocast then saves memory but not time. These answer which branch a chapter takes, and
:func:`hardware_line` prints it on a visible line.
"""

from __future__ import annotations

import torch

from tricks_helpers._checks import check_type
from tricks_helpers.env import cpu as _cpu

__all__ = [
    "bf16_support",
    "native_bf16",
    "autocast_dtypes",
    "cpu_bf16_flags",
    "native_autocast",
    "hardware_line",
]

# CPU features that give native bfloat16 math: x86 AVX512-BF16 and AMX-BF16, Arm's BF16
# extension (``bf16`` in /proc/cpuinfo's Features and in torch.cpu.get_capabilities()).
_BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")


def cpu_bf16_flags() -> frozenset[str]:
    """The bfloat16 features of this CPU, as torch itself detects them (chapter 04).

    Reads ``torch.cpu.get_capabilities()`` (cpuinfo, the library torch's own kernels dispatch
    on, so it works where ``/proc/cpuinfo`` does not exist) and falls back to
    :func:`cpu_flags` on a torch without it.

    Returns:
        The subset of ``{"avx512_bf16", "amx_bf16", "bf16"}`` this CPU has.
    """
    caps = _cpu._torch_capabilities()
    if caps:
        return frozenset(f for f in _BF16_CPU_FLAGS if caps.get(f) is True)
    return frozenset(f for f in _BF16_CPU_FLAGS if f in _cpu.cpu_flags(torch_fallback=False))


def bf16_support(device: str | torch.device = "cpu", flags: frozenset[str] | None = None) -> str:
    """Say whether ``device`` computes bfloat16 natively.

    Args:
        device: ``"cpu"`` or a CUDA device.
        flags: CPU flags to judge by (defaults to :func:`cpu_bf16_flags`); for tests.

    Returns:
        ``"native (<flag>)"`` when the hardware has bf16 instructions, ``"emulated (...)"``
        when bf16 works but is computed through float32, or ``"not supported"``.

    Raises:
        ValueError: on a device type other than ``cpu`` or ``cuda``.
    """
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            return "not supported (no CUDA device)"
        if torch.cuda.is_bf16_supported(including_emulation=False):
            return "native (CUDA compute capability >= 8.0)"
        return "emulated (CUDA device older than compute capability 8.0)"
    if dev.type != "cpu":
        raise ValueError(f"bf16_support: expected a 'cpu' or 'cuda' device, got {dev.type!r}")
    flags = cpu_bf16_flags() if flags is None else flags
    found = [f for f in _BF16_CPU_FLAGS if f in flags]
    if found:
        return f"native ({', '.join(found)})"
    return "emulated (no avx512_bf16/amx_bf16 on this CPU: bf16 math runs through float32)"


def native_bf16(device: str | torch.device = "cpu") -> bool:
    """True when ``device`` computes bfloat16 natively (see :func:`bf16_support`; chapter 04).

    On a CPU without ``avx512_bf16``/``amx_bf16`` bfloat16 still works, but it is emulated
    through float32, so autocast to bfloat16 saves memory but not time.

    Raises:
        ValueError: on a device type other than ``cpu`` or ``cuda``.
    """
    return bf16_support(device).startswith("native")


def autocast_dtypes(device: str | torch.device = "cpu") -> list[torch.dtype]:
    """Low-precision dtypes ``torch.autocast`` is worth trying with on ``device`` (chapter 04).

    CPU: ``[torch.bfloat16]`` (float16 autocast exists on CPU but is rarely faster there).
    CUDA: ``[torch.float16]`` plus ``torch.bfloat16`` where the GPU supports it natively.

    Raises:
        ValueError: on a device type other than ``cpu`` or ``cuda``, or ``cuda`` without CUDA.
    """
    kind = torch.device(device).type
    if kind == "cpu":
        return [torch.bfloat16]
    if kind != "cuda":
        raise ValueError(f"autocast_dtypes: expected a 'cpu' or 'cuda' device, got {kind!r}")
    if not torch.cuda.is_available():
        raise ValueError("autocast_dtypes: CUDA requested but torch.cuda.is_available() is False")
    return [torch.float16] + ([torch.bfloat16] if native_bf16("cuda") else [])


def native_autocast(device: str | torch.device = "cpu", dtype: torch.dtype | None = None) -> bool:
    """True when ``dtype`` runs natively on ``device`` under autocast (chapter 04).

    ``dtype`` defaults to the **last** of :func:`autocast_dtypes`, the one chapter 04 times
    (``amp_dtype = env.autocast_dtypes(device)[-1]``): bfloat16 on a GPU that has it natively,
    else float16 (issue 33: this once judged the first, float16, while the page timed bfloat16).
    bfloat16: :func:`native_bf16` (CPU: ``avx512_bf16``, ``amx_bf16`` or Arm ``bf16``; CUDA:
    compute capability 8.0). float16 on CUDA: tensor cores from compute capability 7.0. This
    is the branch chapter 04 takes: only where it is true is a speed-up asserted.

    Raises:
        TypeError: when ``dtype`` is not a ``torch.dtype``.
        ValueError: as :func:`autocast_dtypes`, or a ``dtype`` that is not one of them.
    """
    dtypes = autocast_dtypes(device)
    if dtype is None:
        dtype = dtypes[-1]
    check_type("native_autocast", "dtype", dtype, torch.dtype)
    if dtype not in dtypes:
        names = [str(d).removeprefix("torch.") for d in dtypes]
        raise ValueError(
            f"native_autocast: {str(dtype).removeprefix('torch.')} is not an autocast dtype of "
            f"{torch.device(device).type} (those are {names})"
        )
    if dtype == torch.bfloat16:
        return native_bf16(device)
    return torch.cuda.get_device_capability(torch.device(device)) >= (7, 0)


def hardware_line(device: str | torch.device = "cpu", flags: frozenset[str] | None = None) -> str:
    """One line saying which low-precision hardware ``device`` has (chapter 04).

    Chapter 04 prints it after the prefix ``[hardware] `` (masked by the sanitize file: it is
    shown on the page but not compared), so a reader and CI see which branch ran, e.g.
    ``cpu: AVX512 kernels, avx512_bf16 yes, amx_bf16 no -> bfloat16 native`` or
    ``cuda: NVIDIA H100 (compute capability 9.0) -> float16 tensor cores, bfloat16 native``.

    Args:
        device: ``"cpu"`` or a CUDA device.
        flags: CPU bf16 flags to report (defaults to :func:`cpu_bf16_flags`); for tests.

    Raises:
        ValueError: as :func:`autocast_dtypes`.
    """
    kind = torch.device(device).type
    if kind == "cpu":
        flags = cpu_bf16_flags() if flags is None else flags
        capability = torch.backends.cpu.get_cpu_capability()
        has = ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in _BF16_CPU_FLAGS[:2])
        if "bf16" in flags:
            has += ", arm bf16 yes"
        mode = "native" if bf16_support("cpu", flags=flags).startswith("native") else "emulated"
        return f"cpu: {capability} kernels, {has} -> bfloat16 {mode}"
    autocast_dtypes(device)  # validates the device and CUDA's presence
    dev = torch.device(device)
    major, minor = torch.cuda.get_device_capability(dev)
    cores = "float16 tensor cores" if (major, minor) >= (7, 0) else "no tensor cores"
    bf16 = "bfloat16 native" if native_bf16(dev) else "bfloat16 emulated"
    return (
        f"cuda: {torch.cuda.get_device_name(dev)} (compute capability {major}.{minor}) "
        f"-> {cores}, {bf16}"
    )
