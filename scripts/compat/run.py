"""The compat mode of the runner: every chapter under one torch release, one line each.

``python -m scripts.book.run_notebooks --compat 2.10.0 [NOTEBOOK ...]``
(``make compat TORCH=2.10.0``) runs in the venv made for that release and:

1. refuses to run where this environment's torch is not that release, or its torchao does not
   satisfy the release's row of ``colab_cell.TORCHAO_FOR_TORCH`` (``compat_env``), so a record
   can never name versions that did not run;
2. executes each chapter in memory (``chapter_run.run_chapter``: nothing under ``book/`` is
   written, a failure never stops the run) and prints one line per chapter as it finishes
   (``compat_outcome.line``: ``ran``, ``ran, N sections skipped: ...`` or ``failed at code cell
   N: Error: message``, with seconds), then all the lines again as a summary;
3. writes ``results/compat/torch-<release>.json`` (``compat_records``): the whole record when
   every chapter ran, else (named notebooks) only those chapters' entries, the others kept.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripts.compat import outcome as compat_outcome
from scripts.compat import release_lines
from scripts.compat.env import torchao_requirement
from scripts.compat.records import (
    FOLDER,
    check_header,
    make_record,
    merge,
    read_record,
    record_path,
    write_record,
)

__all__ = ["installed_versions", "check_environment", "run_compat"]


def installed_versions() -> dict[str, str]:
    """``{"torch", "torchao", "python"}`` of this environment (``"none"``: not installed)."""
    out = {"python": platform.python_version()}
    for name in ("torch", "torchao"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "none"
    return out


def check_environment(release: str, versions: dict[str, str], requirement: str) -> None:
    """Refuse an environment that is not the one the record would name.

    Raises:
        ValueError: when ``versions["torch"]`` (its ``+local`` part aside) is not ``release``,
            or ``versions["torchao"]`` is missing or outside ``requirement``.
    """
    from packaging.requirements import Requirement

    if versions["torch"].split("+")[0] != release:
        raise ValueError(
            f"this environment has torch {versions['torch']}, not {release}: run it with the "
            f"venv made for it (make compat TORCH={release})"
        )
    spec = Requirement(requirement).specifier
    if versions["torchao"] == "none" or not spec.contains(versions["torchao"], prereleases=True):
        raise ValueError(
            f"this environment has torchao {versions['torchao']}, but torch {release}'s row "
            f"asks for {requirement!r} (scripts/release/colab_cell.py TORCHAO_FOR_TORCH)"
        )


def stored_outputs(path: Path, nb: Any, rules: list[tuple[str, str]]) -> dict[str, Any] | None:
    """``compat.outputs.compare`` of the fresh ``nb`` against the stored notebook at ``path``
    (None when either is missing or their code cells differ in number)."""
    if nb is None or not Path(path).exists():
        return None
    import nbformat

    from scripts.compat import outputs

    try:
        return outputs.compare(nbformat.read(path, as_version=4), nb, rules)
    except (ValueError, OSError):
        return None


def run_compat(
    paths: list[Path],
    release: str,
    *,
    root: Path,
    runner: Callable[..., Any],
    partial: bool,
    machine: str | None = None,
    versions: dict[str, str] | None = None,
    commit: str | None = None,
    timeout: int = 600,
) -> tuple[dict[str, dict[str, Any]], Path]:
    """Run ``paths`` under this environment's torch ``release`` and write its record.

    Args:
        root: the repository root (the record goes to ``root/results/compat``).
        runner: ``chapter_run.run_chapter`` (tests pass a stub returning an object with
            ``nb``, ``seconds`` and ``error``).
        partial: True when only some chapters were named: their entries replace theirs in the
            existing record, which must come from the same torch, torchao, Python and machine.
        machine, versions, commit: default to this machine's id
            (``machine_records.machine_facts``), :func:`installed_versions` and the book's
            commit (``tricks_helpers.env.source_commit``).

    Returns:
        The entries of the chapters run (``compat_outcome.entry``) and the record's path.

    Raises:
        ValueError: see :func:`check_environment` and ``compat_records.merge``; a bad release.
    """
    requirement = torchao_requirement(release)
    versions = installed_versions() if versions is None else versions
    check_environment(release, versions, requirement)
    if machine is None:
        from scripts.book.machine_records import machine_facts

        machine = machine_facts()["id"]
    if commit is None:
        from tricks_helpers.env import source_commit

        commit = source_commit()
    header = {
        "torch_release": release,
        "torch": versions["torch"],
        "torchao": versions["torchao"],
        "torchao_requirement": requirement,
        "python": versions["python"],
        "machine": machine,
    }
    target = record_path(Path(root) / FOLDER, release, versions["python"])
    rules = release_lines.rules()
    old = read_record(target) if partial and target.exists() else None
    if old is not None:
        check_header(old, header)  # before running anything: a merge that cannot be made
    date = datetime.datetime.now(datetime.UTC).date().isoformat()
    width = max(len(Path(p).stem) for p in paths)
    chapters: dict[str, dict[str, Any]] = {}
    lines = []
    print(f"compat: torch {versions['torch']}, torchao {versions['torchao']}", flush=True)
    for path in paths:
        path = Path(path)
        try:
            done = runner(path, write=False, timeout=timeout)
            nb, seconds, error = done.nb, done.seconds, done.error
        except Exception as exc:  # one chapter's crash never loses the chapters that finished
            nb, seconds, error = None, 0.0, f"{type(exc).__name__}: {exc}".splitlines()[0]
        compared = stored_outputs(path, nb, rules)
        chapters[path.stem] = compat_outcome.entry(nb, seconds, error, date, commit, compared)
        lines.append(compat_outcome.line(path.stem, chapters[path.stem], width))
        print(lines[-1], flush=True)
    record = merge(old, make_record(**header, chapters=chapters))
    written = write_record(record, target.parent)
    ran = sum(e["status"] == "ran" for e in chapters.values())
    print(
        f"summary: torch {versions['torch']}, torchao {versions['torchao']} "
        f"({requirement}), Python {versions['python']}, machine {machine}",
        *lines,
        f"{ran} of {len(chapters)} chapters ran; record: {written}",
        sep="\n",
        flush=True,
    )
    return chapters, written
