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

from tricks_helpers.env.cpu import cpu_model, mps_available
from tricks_helpers.env.precision import bf16_support

__all__ = [
    "EXECUTED_WITH_TORCH",
    "EnvCard",
    "source_commit",
    "environment_card",
    "print_environment",
]

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

    root = (package_dir or Path(__file__).resolve().parents[1]).parent
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
