"""The environment card printed in every chapter's setup cell (introduced in chapter 01).

The card states what the measurements on a page were made with: torch version, device,
CPU model, thread count, CUDA/cuDNN and GPU name when present, and bf16 support.

Its layout is fixed, one ``key  value`` line per fact, so nbval compares it: the torch
version (pinned by the book) is compared verbatim, while machine-specific values
(CPU model, threads, GPU, bf16, Python) are masked by the repository's sanitize file.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from pathlib import Path

import torch

__all__ = ["EnvCard", "environment_card", "print_environment", "cpu_model", "cpu_flags",
           "bf16_support", "native_bf16", "autocast_dtypes"]

_BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> frozenset[str]:
    """Return the CPU feature flags of the first processor listed in ``cpuinfo``.

    Returns an empty set where the file does not exist (macOS, Windows).
    """
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def cpu_model(cpuinfo: str | Path = "/proc/cpuinfo") -> str:
    """Return a readable CPU model name (``platform.processor()`` where /proc is absent)."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            return value.strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def bf16_support(device: str | torch.device = "cpu", flags: frozenset[str] | None = None) -> str:
    """Say whether ``device`` computes bfloat16 natively.

    Args:
        device: ``"cpu"`` or a CUDA device.
        flags: CPU flags to judge by (defaults to :func:`cpu_flags`); for tests.

    Returns:
        ``"native (<flag>)"`` when the hardware has bf16 instructions, ``"emulated (...)"``
        when bf16 works but is computed through float32, or ``"not supported"``.
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
    flags = cpu_flags() if flags is None else flags
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


@dataclass(frozen=True)
class EnvCard:
    """What a chapter's measurements were made with."""

    torch_version: str
    torch_build: str
    python: str
    device: str
    cpu: str
    threads: int
    cuda: str
    cudnn: str
    gpu: str
    bf16: str
    extras: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The card as fixed ``key  value`` lines (see the module docstring)."""
        rows = [
            ("torch", f"{self.torch_version} (build {self.torch_build})"),
            ("python", self.python),
            ("device", self.device),
            ("cpu", self.cpu),
            ("threads", str(self.threads)),
            ("cuda", self.cuda),
            ("cudnn", self.cudnn),
            ("gpu", self.gpu),
            ("bf16", self.bf16),
        ]
        rows += sorted(self.extras.items())
        return [f"  {key:<8} {value}" for key, value in rows]

    def __str__(self) -> str:
        return "\n".join(["environment"] + self.lines())


def environment_card(extras: dict[str, str] | None = None) -> EnvCard:
    """Collect the environment card for this process.

    Args:
        extras: further ``name -> version`` lines a chapter wants on its card (e.g. ``lmdb``).

    Returns:
        An :class:`EnvCard`; reading it changes no global state (CUDA is only queried,
        not initialised, where it is unavailable).
    """
    version, _, build = torch.__version__.partition("+")
    has_cuda = torch.cuda.is_available()
    device = "cuda" if has_cuda else "cpu"
    if has_cuda:
        cuda = f"{torch.version.cuda} ({torch.cuda.device_count()} device(s))"
        cudnn_v = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        cudnn = str(cudnn_v) if cudnn_v else "not available"
        props = torch.cuda.get_device_properties(0)
        gpu = f"{props.name} ({props.total_memory / 2**30:.0f} GiB)"
    else:
        cuda, cudnn, gpu = "not available", "not available", "none"
    return EnvCard(
        torch_version=version,
        torch_build=build or "default",
        python=platform.python_version(),
        device=device,
        cpu=cpu_model(),
        threads=torch.get_num_threads(),
        cuda=cuda,
        cudnn=cudnn,
        gpu=gpu,
        bf16=bf16_support(device),
        extras=dict(extras or {}),
    )


def print_environment(extras: dict[str, str] | None = None) -> EnvCard:
    """Print the environment card (see :func:`environment_card`) and return it."""
    card = environment_card(extras)
    print(card)
    return card
