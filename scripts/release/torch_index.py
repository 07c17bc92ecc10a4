"""Which index ``make venv`` takes torch from: the CPU build unless there is an NVIDIA GPU.

    python scripts/release/torch_index.py      prints the index url, or nothing

On Linux, PyPI's torch is the CUDA build: with its CUDA libraries a 5.7 GB environment, against
1.9 GB with the CPU build from PyTorch's CPU wheel index. A newcomer without an NVIDIA GPU should
get the CPU build by default, so ``make venv`` passes what this prints to pip as an *extra*
index (``--extra-index-url``; pip still reaches PyPI for everything else, and prefers
``torch==X+cpu`` to ``torch==X`` for the pin ``torch==X``).

It prints :data:`CPU_INDEX` when all of these hold, and nothing otherwise (pip then uses the
index it is configured with alone), with one line on stderr saying why:

- the platform is Linux (macOS and Windows wheels on PyPI are CPU builds already);
- no NVIDIA GPU is visible: no ``nvidia-smi`` on the PATH, no ``/proc/driver/nvidia/version``,
  no ``/dev/nvidia0``;
- the index answers within :data:`PROBE_SECONDS` (a bounded probe: where it cannot be reached, a
  firewall or no network, the install is not slowed by pip retrying an extra index it cannot
  reach).

``make venv TORCH_INDEX=<url>`` (as the workflows set it) or ``TORCH_INDEX=`` (PyPI's build)
skips the probe. Standard library only: it runs before the venv exists.
"""

from __future__ import annotations

import shutil
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PROBE_SECONDS = 5.0
#: Files whose presence says the NVIDIA driver is loaded.
NVIDIA_FILES = ("/proc/driver/nvidia/version", "/dev/nvidia0")


def has_nvidia_gpu(
    which: Callable[[str], str | None] = shutil.which,
    exists: Callable[[str], bool] = lambda p: Path(p).exists(),
) -> bool:
    """Whether an NVIDIA GPU is visible: ``nvidia-smi`` on the PATH or the driver's files."""
    return which("nvidia-smi") is not None or any(exists(p) for p in NVIDIA_FILES)


def reachable(url: str, timeout: float = PROBE_SECONDS) -> bool:
    """Whether ``url`` answers an HTTP request with a status below 400 within ``timeout`` s."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout):
            return True
    except (urllib.error.URLError, OSError, ValueError):
        return False


def choose(
    platform: str = sys.platform,
    gpu: Callable[[], bool] = has_nvidia_gpu,
    probe: Callable[[str], bool] = reachable,
) -> tuple[str, str]:
    """``(index url or "", why)``: the CPU index, or nothing and the reason."""
    if not platform.startswith("linux"):
        return "", f"{platform}: the registry's torch is a CPU build already"
    if gpu():
        return "", "an NVIDIA GPU is visible: the registry's CUDA build of torch"
    if not probe(f"{CPU_INDEX}/torch/"):
        return "", (
            f"no NVIDIA GPU, but {CPU_INDEX} did not answer within {PROBE_SECONDS:g} s: "
            "the registry's torch (set TORCH_INDEX to choose)"
        )
    return CPU_INDEX, f"no NVIDIA GPU: torch's CPU build from {CPU_INDEX}"


def main() -> int:
    url, why = choose()
    print(f"torch index: {why}", file=sys.stderr)
    if url:
        print(url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
