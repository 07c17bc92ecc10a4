"""Run the book's chapters on this machine and record every comparison (issue 22).

    python -m tricks_helpers.survey [NOTEBOOK ...]        run, write results/<id>-survey.json
    python -m tricks_helpers.survey --compare [REF.json]  this machine's verdicts vs the book's

The chapters' own code runs, not a copy of it: each notebook is executed in memory
(:func:`tricks_helpers.notebook_run.execute_notebook`, the executor ``make execute`` uses too),
in its own folder (the notebook is never written back), with
``TRICKS_RECORDS`` set so that every shown comparison appends its record
(:mod:`tricks_helpers.bench.records`). A chapter that fails is recorded as failed with its
error, and the survey goes on. Progress is a tqdm bar where tqdm is installed, else a line per
chapter. The results file is :mod:`tricks_helpers.machine_records`'s; ``--compare`` reads the
reference (the file whose ``source`` is ``"book"``) and prints, line by line, where this
machine's survey verdicts agree with it. A survey's file is ``results/<machine-id>-survey.json``
(:func:`tricks_helpers.machine_records.results_path`): on the machine that made the book's run,
the survey sits beside the reference records and never replaces them.
Needs ``nbformat`` and ``nbclient`` (the book's environment).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from machine_records import (
    compare_verdicts,
    limits_record,
    machine_facts,
    merge_results,
    read_results,
    results_path,
    write_results,
)
from notebook_run import execute_notebook
from tricks_helpers.bench.records import CHAPTER_ENV, RECORDS_ENV, read_records

__all__ = ["records_env", "run_chapter", "survey", "reference_file", "main"]


def records_env(records_file: Path, chapter: str, base: Mapping[str, str] | None = None) -> dict:
    """The kernel's environment: ``base`` (default ``os.environ``) plus the two record variables."""
    return {
        **(os.environ if base is None else base),
        RECORDS_ENV: str(records_file),
        CHAPTER_ENV: chapter,
    }


def run_chapter(
    path: Path, *, timeout: int = 600, environ: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Execute one notebook in memory (never written back) and collect its records.

    Returns:
        ``({"status", "error", "seconds"}, records)``; a failed chapter keeps the records it
        wrote before failing.

    Raises:
        FileNotFoundError: when ``path`` does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"run_chapter: no notebook {path}")
    with tempfile.TemporaryDirectory(prefix="survey-") as tmp:
        records_file = Path(tmp) / f"{path.stem}.jsonl"
        done = execute_notebook(
            path, timeout=timeout, env=records_env(records_file, path.stem, environ)
        )
        records = read_records(records_file) if records_file.exists() else []
    error, seconds = done.error, round(done.seconds, 1)
    status = {"status": "failed" if error else "ok", "error": error, "seconds": seconds}
    return status, records


def _progress(paths: list[Path]) -> Iterable[Path]:
    try:
        from tqdm import tqdm
    except ImportError:
        for i, p in enumerate(paths, start=1):
            print(f"[{i}/{len(paths)}] {p.stem} ...", flush=True)
            yield p
        return
    bar = tqdm(paths, unit="chapter", file=sys.stdout)
    for p in bar:
        bar.set_postfix_str(p.stem)
        yield p


def survey(
    paths: list[Path],
    results_dir: Path,
    *,
    source: str = "survey",
    timeout: int = 600,
    run: Callable[..., tuple[dict, list]] = run_chapter,
    measure: Callable[[], Any] | None = None,
) -> Path:
    """Measure this machine's limits, run ``paths`` one after another, write its results file.

    The limits (``measure()``, default :func:`tricks_helpers.limits.measure_limits`, about
    2.5 s) are measured once, before any chapter, and stored as the file's ``limits``.

    Returns:
        The path written: :func:`~tricks_helpers.machine_records.results_path` for ``source``
        (``results_dir/<machine id>-survey.json`` for a survey; the book's file is left alone).
    """
    machine = machine_facts()
    target = results_path(results_dir, machine["id"], source)
    old = read_results(target) if target.exists() else None
    limits = limits_record((measure or _measure_limits)())
    chapters, records = {}, []
    for path in _progress(list(paths)):
        status, recs = run(path, timeout=timeout)
        chapters[Path(path).stem] = status
        records += recs
        if status["status"] == "failed":
            print(f"  {Path(path).stem} FAILED: {status['error']}", flush=True)
    merged = merge_results(old, machine, chapters, records, source, limits)
    return write_results(merged, results_dir)


def _measure_limits() -> Any:
    from tricks_helpers.limits import measure_limits

    return measure_limits()


def reference_file(results_dir: Path) -> Path:
    """The one results file whose ``source`` is ``"book"`` (the stored notebooks' run).

    Raises:
        FileNotFoundError: when there is none; ValueError: when there are several.
    """
    found = [
        p for p in sorted(Path(results_dir).glob("*.json")) if read_results(p)["source"] == "book"
    ]
    if not found:
        raise FileNotFoundError(f"no results file with source 'book' in {results_dir}")
    if len(found) > 1:
        raise ValueError(f"several reference results files: {[p.name for p in found]}")
    return found[0]


def main(argv: list[str] | None = None, root: Path | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks (default: every book/NN_*.ipynb)")
    parser.add_argument("--results", default=None, help="results folder (default: results/)")
    parser.add_argument(
        "--compare",
        nargs="?",
        const="",
        default=None,
        metavar="REFERENCE",
        help="compare this machine's results with the reference; run nothing",
    )
    args = parser.parse_args(argv)
    root = Path.cwd() if root is None else Path(root)
    results_dir = Path(args.results) if args.results else root / "results"
    if args.compare is not None:
        try:
            ref = Path(args.compare) if args.compare else reference_file(results_dir)
            mine_path = results_path(results_dir, machine_facts()["id"], "survey")
            text, bad = compare_verdicts(read_results(mine_path), read_results(ref))
        except (FileNotFoundError, ValueError) as exc:
            print(f"survey: {exc}; run `make survey` first", file=sys.stderr)
            return 1
        print(text)
        return 1 if bad else 0
    paths = [Path(p) for p in args.notebooks] or sorted((root / "book").glob("[0-9][0-9]_*.ipynb"))
    if not paths:
        print("survey: no notebooks to run", file=sys.stderr)
        return 1
    path = survey(paths, results_dir)
    data = read_results(path)
    failed = [k for k, v in data["chapters"].items() if v["status"] == "failed"]
    print(
        f"survey: wrote {path} ({len(data['records'])} records, {path.stat().st_size} bytes)"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
