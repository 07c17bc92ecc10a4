"""``make wheelhouse``: the wheels a GPU host that brings its own torch needs, for offline use.

    python -m scripts.compat.wheelhouse [--dest .wheelhouse] [--python 3.12]
        [--platform manylinux_2_28_x86_64] [--host-torch 2.11.0] [--max-mb 30]

A GPU host a contributor lends often has CUDA torch installed, with numpy, matplotlib, pillow,
scikit-learn, h5py, OpenCV and pytest beside it (a torch image's usual set, :data:`HOST_HAS`), and
no network. ``make gpu-run`` (``scripts/compat/gpu_run.py``) installs this folder there with
``pip --no-index`` and never touches the host's torch. This tool, run where pip reaches the
package index, downloads for the target Python and platform (not this machine's):

- :func:`needs`: what the notebooks and the GPU tests import that a torch image lacks: nbval,
  nbclient, nbformat, ipykernel, jsonschema, lmdb, simplejpeg, torchinfo at their
  ``requirements.txt`` pins, and torchao from the host torch's row of ``TORCHAO_FOR_TORCH``
  (``scripts/compat/env.py``); myst-nb without its dependencies (:data:`WITHOUT_DEPS`: the
  claims cells call ``myst_nb.glue``, which needs only IPython and docutils);
- their whole dependency closure for that Python and platform, then drops the wheels of
  :data:`HOST_HAS` (the host's own copies serve);
- writes ``requirements.txt`` (the pins) and ``MANIFEST.txt`` (every wheel, its size) into the
  folder, and fails when the folder is over ``--max-mb`` (default 30: it travels with the
  working tree to the host).

Only the standard library is imported; pip runs as ``python -m pip``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

from scripts.compat.env import torchao_requirement

ROOT = Path(__file__).resolve().parents[2]
# what the notebooks and the GPU tests import that a torch image lacks (pins: requirements.txt)
NEEDED = (
    "nbval",
    "nbclient",
    "nbformat",
    "ipykernel",
    "jsonschema",
    "lmdb",
    "simplejpeg",
    "torchinfo",
)
# the claims cells glue their tip clause with myst_nb.glue, which imports only IPython and
# docutils: myst-nb comes without its Sphinx closure (babel, sphinx, sqlalchemy: about 25 MB)
WITHOUT_DEPS = ("myst-nb", "docutils")
# a torch image's usual set: torch and what it needs, and the big scientific wheels. Their
# wheels are dropped from the closure (the host's copies serve; gpu_run checks they are there).
HOST_HAS = frozenset(
    {
        "torch",
        "triton",
        "filelock",
        "typing-extensions",
        "sympy",
        "mpmath",
        "networkx",
        "jinja2",
        "markupsafe",
        "fsspec",
        "setuptools",
        "numpy",
        "scipy",
        "matplotlib",
        "contourpy",
        "cycler",
        "fonttools",
        "kiwisolver",
        "pyparsing",
        "pillow",
        "python-dateutil",
        "six",
        "packaging",
        "scikit-learn",
        "joblib",
        "threadpoolctl",
        "h5py",
        "opencv-python-headless",
        "pytest",
        "pluggy",
        "iniconfig",
        "tqdm",
        "pyyaml",
        "psutil",
        "pygments",
        "attrs",
    }
)
PLATFORM = "manylinux_2_28_x86_64"
# pip matches manylinux tags exactly: a 2_28 host also runs every older tag
_OLDER_TAGS = (
    "manylinux_2_27_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux_2_5_x86_64",
    "manylinux1_x86_64",
)


def normalize(name: str) -> str:
    """A distribution name as pip compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_name(filename: str) -> str:
    """The normalized distribution name of a wheel file."""
    return normalize(filename.split("-")[0])


def pins(requirements: Path = ROOT / "requirements.txt") -> dict[str, str]:
    """``name -> "name==version"`` of every pinned line of ``requirements.txt``."""
    out = {}
    for line in requirements.read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name = line.split("==")[0].strip()
            out[normalize(name)] = line
    return out


def needs(host_torch: str, requirements: Path = ROOT / "requirements.txt") -> list[str]:
    """The requirement lines to download: :data:`NEEDED` at their pins, torchao for the host.

    Raises:
        ValueError: a needed package has no pin in ``requirements.txt`` or ``constraints.txt``.
    """
    pinned = pins(requirements)
    pinned.update(
        {
            k: v
            for k, v in pins(requirements.with_name("constraints.txt")).items()
            if k not in pinned
        }
        if requirements.with_name("constraints.txt").exists()
        else {}
    )
    missing = [n for n in NEEDED + WITHOUT_DEPS if normalize(n) not in pinned]
    if missing:
        raise ValueError(f"wheelhouse: no pin for {missing} in requirements.txt/constraints.txt")
    return [pinned[normalize(n)] for n in NEEDED] + [torchao_requirement(host_torch)]


def platforms(platform: str) -> list[str]:
    """``platform`` and, for a manylinux x86_64 one, every older manylinux tag it runs."""
    m = re.fullmatch(r"manylinux_2_(\d+)_x86_64", platform)
    if not m:
        return [platform]
    glibc = int(m.group(1))
    older = [
        t for t in _OLDER_TAGS if not t.startswith("manylinux_2_") or int(t.split("_")[2]) <= glibc
    ]
    return [platform] + [t for t in older if t != platform]


def download(
    requirements: list[str],
    dest: Path,
    python: str,
    platform: str,
    index: list[str],
    *,
    deps: bool = True,
) -> None:
    """``pip download`` ``requirements`` (their closure unless ``deps=False``) as wheels for
    ``python``/``platform``."""
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:"]
    cmd += [] if deps else ["--no-deps"]
    cmd += ["--python-version", python, "--implementation", "cp", "-d", str(dest)]
    for tag in platforms(platform):
        cmd += ["--platform", tag]
    cmd += index + list(requirements)
    subprocess.run(cmd, check=True)


def prune(dest: Path, host_has: frozenset[str] = HOST_HAS) -> list[str]:
    """Delete the wheels of ``host_has`` from ``dest``; returns the names dropped."""
    dropped = []
    for wheel in sorted(dest.glob("*.whl")):
        if wheel_name(wheel.name) in host_has:
            wheel.unlink()
            dropped.append(wheel_name(wheel.name))
    return dropped


def write_manifest(dest: Path, requirements: list[str], python: str, platform: str) -> int:
    """Write ``requirements.txt`` and ``MANIFEST.txt``; returns the wheels' total bytes."""
    wheels = sorted(dest.glob("*.whl"))
    total = sum(w.stat().st_size for w in wheels)
    (dest / "requirements.txt").write_text("\n".join(requirements) + "\n", encoding="utf-8")
    lines = [
        f"# make wheelhouse: Python {python}, {platform}; {len(wheels)} wheels, {total:,} bytes",
        f"# left to the host (a torch image has them): {', '.join(sorted(HOST_HAS))}",
    ]
    lines += [f"{w.name}  {w.stat().st_size:,}" for w in wheels]
    (dest / "MANIFEST.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", default=".wheelhouse", help="folder (default .wheelhouse)")
    parser.add_argument("--python", default="3.12", help="target Python (default 3.12)")
    parser.add_argument("--platform", default=PLATFORM, help=f"target platform ({PLATFORM})")
    parser.add_argument("--host-torch", default="2.11.0", help="the host's torch (torchao row)")
    parser.add_argument("--max-mb", type=float, default=30.0, help="size limit in MB (30)")
    parser.add_argument(
        "--index", action="append", default=[], help="extra pip arguments, e.g. --index-url=URL"
    )
    args = parser.parse_args(argv)
    dest = Path(args.dest)
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.whl"):  # one version of each: two would stop the whole install
        old.unlink()
    try:
        reqs = needs(args.host_torch)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 1
    start = time.monotonic()
    try:
        download(reqs, dest, args.python, args.platform, args.index)
        alone = [
            pins().get(normalize(n)) or pins(ROOT / "constraints.txt")[normalize(n)]
            for n in WITHOUT_DEPS
        ]
        download(alone, dest, args.python, args.platform, args.index, deps=False)
        reqs += alone
    except subprocess.CalledProcessError as exc:
        print(f"wheelhouse: pip download failed ({exc.returncode}); see above", file=sys.stderr)
        return 1
    dropped = prune(dest)
    total = write_manifest(dest, reqs, args.python, args.platform)
    count = len(list(dest.glob("*.whl")))
    print(
        f"wheelhouse: {dest}: {count} wheels, {total / 1e6:.1f} MB for Python {args.python} "
        f"{args.platform} in {time.monotonic() - start:.0f} s; left to the host: "
        f"{', '.join(sorted(set(dropped))) or 'none'}"
    )
    if total > args.max_mb * 1e6:
        print(f"wheelhouse: {total / 1e6:.1f} MB is over --max-mb {args.max_mb}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
