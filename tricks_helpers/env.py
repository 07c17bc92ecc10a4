"""The environment card printed in every chapter's setup cell (introduced in chapter 01).

The card states what the measurements on a page were made with: torch version, device,
CPU model, thread count, CUDA/cuDNN and GPU name when present, and bf16 support.

Its layout is fixed, one ``key  value`` line per fact, so nbval compares it: the torch
version (pinned by the book) is compared verbatim, while machine-specific values
(CPU model, threads, GPU, bf16, Python) are masked by the repository's sanitize file.
"""

from __future__ import annotations

import platform
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tricks_helpers._checks import check_type

__all__ = [
    "EnvCard",
    "environment_card",
    "print_environment",
    "cpu_model",
    "cpu_flags",
    "cpu_arch",
    "mps_available",
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


def cpu_bf16_flags() -> frozenset[str]:
    """The bfloat16 features of this CPU, as torch itself detects them (chapter 04).

    Reads ``torch.cpu.get_capabilities()`` (cpuinfo, the library torch's own kernels dispatch
    on, so it works where ``/proc/cpuinfo`` does not exist) and falls back to
    :func:`cpu_flags` on a torch without it.

    Returns:
        The subset of ``{"avx512_bf16", "amx_bf16", "bf16"}`` this CPU has.
    """
    caps = _torch_capabilities()
    if caps:
        return frozenset(f for f in _BF16_CPU_FLAGS if caps.get(f) is True)
    return frozenset(f for f in _BF16_CPU_FLAGS if f in cpu_flags(torch_fallback=False))


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


#: The torch release the book's stored outputs were executed with: the ``torch==`` pin of
#: requirements.txt (tests/test_env_card.py keeps the two equal). The environment card warns
#: on a visible line when another torch runs a page.
EXECUTED_WITH_TORCH = "2.13.0"


@dataclass(frozen=True)
class EnvCard:
    """What a chapter's measurements were made with, and when and from which commit.

    ``executed`` (UTC date) and ``commit`` are the page's provenance; ``expected_torch`` is the
    release the book's outputs were made with: when ``torch_version`` differs, the card gains a
    visible ``warning`` line right under the torch line.
    """

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
    executed: str = ""
    commit: str = ""
    expected_torch: str = EXECUTED_WITH_TORCH

    @property
    def torch_mismatch(self) -> bool:
        """True when this torch is not the release the book's outputs were executed with."""
        return bool(self.expected_torch) and self.torch_version != self.expected_torch

    def lines(self) -> list[str]:
        """The card as fixed ``key  value`` lines (see the module docstring)."""
        rows = [("torch", f"{self.torch_version} (build {self.torch_build})")]
        if self.torch_mismatch:
            rows.append(
                (
                    "warning",
                    f"the book's outputs were made with torch "
                    f"{self.expected_torch}: what you see may differ",
                )
            )
        rows += [
            ("python", self.python),
            ("device", self.device),
            ("cpu", self.cpu),
            ("threads", str(self.threads)),
            ("cuda", self.cuda),
            ("cudnn", self.cudnn),
            ("gpu", self.gpu),
            ("bf16", self.bf16),
        ]
        rows += [
            (key, value)
            for key, value in (("executed", self.executed), ("commit", self.commit))
            if value
        ]
        rows += sorted(self.extras.items())
        return [f"  {key:<8} {value}" for key, value in rows]

    def __str__(self) -> str:
        return "\n".join(["environment"] + self.lines())


def _run_git(root: Path, *args: str) -> str | None:
    """``git -C root ARGS`` output, stripped; None where git is absent or fails."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def source_commit(package_dir: Path | None = None) -> str:
    """The commit of the ``tricks_helpers`` code this process runs (a card line).

    In a git checkout (``make venv`` installs the package editable): the short commit of
    ``HEAD``, plus ``(+ uncommitted changes)`` when files other than notebooks and ``results/``
    differ from it (notebooks and the records in ``results/`` are the outputs being made).
    Installed from git (the Colab set-up cell): the commit pip recorded. Otherwise
    ``"unknown"``. Never raises.
    """
    import importlib.metadata
    import json

    root = (package_dir or Path(__file__).resolve().parent).parent
    if (root / ".git").exists():
        head = _run_git(root, "rev-parse", "--short=12", "HEAD")
        if head:
            dirty = _run_git(
                root,
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                ":(exclude)*.ipynb",
                ":(exclude)results",
            )
            return head + (" (+ uncommitted changes)" if dirty else "")
    try:
        direct = importlib.metadata.distribution("tricks_helpers").read_text("direct_url.json")
        commit = json.loads(direct or "{}").get("vcs_info", {}).get("commit_id", "")
    except (importlib.metadata.PackageNotFoundError, ValueError, AttributeError):
        commit = ""
    return f"{commit[:12]} (installed from git)" if commit else "unknown"


def environment_card(extras: dict[str, str] | None = None) -> EnvCard:
    """Collect the environment card for this process.

    Args:
        extras: further ``name -> version`` lines a chapter wants on its card (e.g. ``lmdb``).

    Returns:
        An :class:`EnvCard`, dated today (UTC) with :func:`source_commit`; reading it changes
        no global state (CUDA is only queried, not initialised, where it is unavailable).
    """
    import datetime

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
        cuda, cudnn = "not available", "not available"
        # an Apple GPU is named, but the chapters take their CPU branch there
        gpu = "Apple MPS (not used: the chapters run on cpu)" if mps_available() else "none"
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
        executed=datetime.datetime.now(datetime.UTC).date().isoformat(),
        commit=source_commit(),
    )


def print_environment(extras: dict[str, str] | None = None) -> EnvCard:
    """Print the environment card (see :func:`environment_card`) and return it."""
    card = environment_card(extras)
    print(card)
    return card
