"""The one notebook runner: execute the book's chapters, record every comparison they show.

    python -m scripts.book.run_notebooks [NOTEBOOK ...]                 book: execute in place
    python -m scripts.book.run_notebooks --no-write --keep-going [...]  try: run only
    python -m scripts.book.run_notebooks --survey [NOTEBOOK ...]        survey (make survey)
    python -m scripts.book.run_notebooks --compare [REFERENCE.json]     survey-compare
    python -m scripts.book.run_notebooks --compat 2.10.0 [NOTEBOOK ...] compat (make compat)

Chapters come from ``_toc.yml`` in reading order (:func:`find_notebooks.notebooks_from_args`)
unless named. Every chapter runs the same way in every mode (:func:`run_chapter`): in memory,
on the current environment's kernel (:func:`notebook_run.execute_notebook`, like
``pytest --nbval-current-env``), in its own folder, with ``TRICKS_RECORDS`` and
``TRICKS_RECORDS_CHAPTER`` set so that every shown comparison appends its record
(:mod:`tricks_helpers.bench.records`). The modes differ only in what they keep:

- ``book`` (the default, ``make execute``): a notebook whose every cell ran is written back;
  this is the only way stored outputs are made. The first failure stops the run (unless
  ``--keep-going``) and leaves that notebook untouched. The records of the chapters that ran
  replace theirs in ``results/<machine-id>.json`` (source ``"book"``: the reference run the
  results page and ``--compare`` read), with this machine's limits
  (:func:`scripts.book.run_limits.run_limits`: measured once before the first notebook when the
  run executes every chapter, about 10 s, never below the ones its results file recorded; a run
  of some chapters reads the recorded set;
  every chapter reads the same set through ``tricks_helpers.limits.machine_limits``, and each
  limit is raised after the run to the fastest rate any chapter held against it).
- ``try`` (``--no-write``): nothing is written, neither notebook nor records:
  it checks that every chapter still runs, e.g. under another torch.
- ``survey`` (``--survey``, ``make survey``): nothing under ``book/`` is written; every chapter
  runs (a failure never stops the survey), and every chapter, failed ones with their error, goes
  to ``results/<machine-id>-survey.json`` (:func:`machine_records.results_path`: beside the
  book's records, never over them) with the limits.
- ``compat`` (``--compat TORCH``, ``make compat``): nothing under ``book/`` is written; every
  chapter runs under this environment's torch (which must be release ``TORCH``), one line each
  (ran / sections skipped, with why / failed at code cell N), and the outcomes go to
  ``results/compat/torch-<TORCH>.json`` (``scripts/compat/run.py``). Exits 1 when a chapter
  failed (its record is written all the same); with ``--strict`` (CI's Python 3.12 job) also
  when a compared cell's outputs differ from the stored ones, or could not be compared.
- ``compare`` (``--compare``, ``make survey-compare``): runs nothing; prints, line by line,
  where this machine's survey verdicts agree with the reference (the one results file whose
  ``source`` is ``"book"``, or the file named).

What a chapter finished is kept when a later one fails: a notebook that cannot be read, a kernel
that dies, even one that dies while writing a record (its cut-off last line is dropped and
named) fail that chapter only, with the reason in its ``error``. A summary table ends a run: one
line per notebook with its status, time and first error. ``results/`` is the folder beside
``book/`` (``--results`` names another).
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from scripts.book.chapter_run import Outcome, run_chapter
from scripts.book.find_notebooks import ROOT, chapter_notebooks, notebooks_from_args
from scripts.book.machine_records import (
    compare_verdicts,
    machine_facts,
    merge_results,
    read_results,
    results_path,
    validate_results,
    write_results,
)
from scripts.book.run_limits import LimitsHanded, run_limits
from tricks_helpers.bench.records import SCHEMA_VERSION
from tricks_helpers.fields import RECORD, check_text

MODES = ("book", "try", "survey")


def summary(outcomes: list[Outcome]) -> str:
    """The closing table: one line per notebook, then a count."""
    import torch  # the torch the kernels ran with: the same environment as this process

    width = max(len(o.name) for o in outcomes)
    failed = [o for o in outcomes if not o.ok]
    lines = [f"summary: torch {torch.__version__}, Python {platform.python_version()}"]
    lines += [o.line(width) for o in outcomes]
    lines.append(
        f"{len(outcomes) - len(failed)} of {len(outcomes)} notebooks ran without error"
        + (f"; failed: {', '.join(o.name for o in failed)}" if failed else "")
    )
    return "\n".join(lines)


def write_records(
    outcomes: list[Outcome],
    folder: Path,
    source: str,
    limits: Mapping[str, Any] | None = None,
    machine: Mapping[str, Any] | None = None,
    *,
    old: Mapping[str, Any] | None,
) -> Path:
    """Merge ``outcomes`` into this machine's results file of ``source`` in ``folder``.

    ``limits``: a ``machine_records.limits_record`` replacing the file's (None: kept);
    ``machine``: the machine's facts (default: this machine's); ``old``: that file as it was
    read before the run (:func:`previous_results`; None where there was none): it is not read
    again.
    """
    machine = machine_facts() if machine is None else machine
    chapters = {o.stem: o.status() for o in outcomes}
    records = [r for o in outcomes for r in o.records]
    claims = [c for o in outcomes for c in o.claims]
    merged = merge_results(old, machine, chapters, records, source, limits, claims)
    return write_results(merged, folder)


def run(
    paths: list[Path],
    mode: str = "book",
    *,
    results: Path | None = None,
    keep_going: bool = False,
    timeout: int = 600,
    runner: Callable[..., Outcome] = run_chapter,
    measure: Callable[[], Any] | None = None,
) -> tuple[list[Outcome], list[Path]]:
    """Run ``paths`` one after another in ``mode`` (see the module's docstring).

    Args:
        results: the results folder (default: ``results/`` beside each notebook's folder).
        keep_going: go on after a failure (always so in a survey).
        runner: runs one chapter (:func:`run_chapter`; tests pass a stub).
        measure: measures the limits (default :func:`tricks_helpers.limits.measure_limits`).

    Returns:
        The outcomes, and the results files written (none in ``try`` mode).

    Raises:
        ValueError: on an unknown mode, or what :func:`check_before_running` refuses (before
            any chapter runs).
    """
    if mode not in MODES:
        raise ValueError(f"run: mode must be one of {MODES}, got {mode!r}")
    keep_going = keep_going or mode == "survey"
    paths = [Path(p) for p in paths]
    source = "book" if mode == "book" else "survey"
    machine = None if mode == "try" else machine_facts()
    previous = check_before_running(paths, source, results, machine)  # each file read once
    limits = None
    if machine is not None and paths:
        first = _folder(paths[0], results)
        every = _every_chapter(first.parent)
        limits = run_limits(  # probed again only when the run executes every chapter
            previous[first],
            results_path(first, machine["id"], source).name,
            measure,
            probe=mode == "survey" or not every or every <= {p.resolve() for p in paths},
        )
    with LimitsHanded(limits, machine, source) as handed:
        outcomes = _run_each(paths, mode, machine, source, keep_going, timeout, runner, handed)
    print(summary(outcomes), flush=True)
    if mode == "try" or not outcomes:
        return outcomes, []
    limits = handed.limits
    folders: dict[Path, list[Outcome]] = {}  # a failed chapter keeps its old book records
    for path, outcome in zip(paths, outcomes):
        if outcome.ok or mode == "survey":
            folder = _folder(path, results)
            folders.setdefault(folder, []).append(outcome)
    written = [
        write_records(outs, folder, source, limits, machine, old=previous[folder])
        for folder, outs in folders.items()
    ]
    return outcomes, written


def _run_each(
    paths: list[Path],
    mode: str,
    machine: Any,
    source: str,
    keep_going: bool,
    timeout: int,
    runner: Callable[..., Outcome],
    handed: LimitsHanded,
) -> list[Outcome]:
    outcomes: list[Outcome] = []
    for path in paths:
        print(f"executing {path.name} ...", flush=True)
        try:
            outcome = runner(path, write=mode == "book", timeout=timeout)
        except Exception as exc:  # one chapter's crash never loses the chapters that finished
            outcome = Outcome(path.name, 0.0, f"{type(exc).__name__}: {exc}".splitlines()[0])
        if machine is not None:
            check_outcome(outcome, machine, source)
        handed.update(outcome)
        outcomes.append(outcome)
        print(
            f"  {'done' if outcome.ok else 'FAILED'} in {outcome.seconds:.1f} s"
            + (f": {outcome.error}" if outcome.error else ""),
            flush=True,
        )
        if not outcome.ok and not keep_going:
            break
    return outcomes


def _folder(path: Path, results: Path | None) -> Path:
    return results or Path(path).resolve().parent.parent / "results"


def previous_results(
    folder: Path, machine: Mapping[str, Any], source: str
) -> dict[str, Any] | None:
    """This machine's results file of ``source`` in ``folder``, read and validated (None where
    there is none): a run reads it once, before the first chapter, and merges into what it read.

    Raises:
        ValueError: naming the file, when it is not valid (fix or move it first).
    """
    target = results_path(folder, machine["id"], source)
    return read_results(target) if target.exists() or target.is_symlink() else None


def check_before_running(
    paths: list[Path], source: str, results: Path | None, machine: Mapping[str, Any] | None
) -> dict[Path, dict[str, Any] | None]:
    """What would fail the merge after every chapter ran, checked before the first runs.

    Two notebooks with the same stem would share one chapter entry (the second's status would
    replace the first's); a results folder that is a file, or a previous results file that is
    not valid, would end the run in a traceback with nothing written.

    Returns:
        Each results folder's previous file (:func:`previous_results`), read this once: the
        limits and the merge after the run use it (empty in ``try`` mode, which writes nothing).

    Raises:
        ValueError: naming the notebooks or the file.
    """
    stems: dict[str, Path] = {}
    for path in paths:
        check_text(f"{path.name}", "chapter name", path.stem, RECORD["chapter"])
        if path.stem in stems:
            raise ValueError(
                f"{stems[path.stem]} and {path} share the chapter name {path.stem!r}: their "
                "records would share one entry; run them apart or rename one"
            )
        stems[path.stem] = path
    if machine is None:  # try mode writes nothing
        return {}
    previous = {}
    for folder in dict.fromkeys(_folder(p, results) for p in paths):
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"--results: {folder} is not a folder")
        previous[folder] = previous_results(folder, machine, source)
    return previous


def check_outcome(outcome: Outcome, machine: Mapping[str, Any], source: str) -> None:
    """Check one chapter's entry, records and claims as the results file will, as they are
    read: what the file would refuse fails this chapter (its records dropped), not the run."""
    try:
        validate_results(
            {
                "schema": SCHEMA_VERSION,
                "source": source,
                "machine": dict(machine),
                "chapters": {outcome.stem: outcome.status()},
                "records": outcome.records,
                "claims": outcome.claims,
            },
            outcome.name,
        )
    except (TypeError, ValueError) as exc:
        outcome.error = "; ".join(e for e in (outcome.error, f"records refused: {exc}") if e)
        outcome.records, outcome.claims = [], []


def _every_chapter(root: Path) -> set[Path]:
    """The book's chapters under ``root`` (none where it has no readable ``_toc.yml``)."""
    try:
        return {p.resolve() for p in chapter_notebooks(root)}
    except ValueError:
        return set()


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


def compare(results_dir: Path, reference: Path | None = None) -> int:
    """Print this machine's survey verdicts against the reference's; 1 when any differ."""
    try:
        ref = reference or reference_file(results_dir)
        mine_path = results_path(results_dir, machine_facts()["id"], "survey")
        text, bad = compare_verdicts(read_results(mine_path), read_results(ref))
    except (FileNotFoundError, ValueError) as exc:
        print(f"run_notebooks: {exc}; run `make survey` first", file=sys.stderr)
        return 1
    print(text)
    return 1 if bad else 0


def main(argv: list[str] | None = None, root: Path | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks (default: every chapter)")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument(
        "--no-write", action="store_true", help="execute in memory only; write nothing"
    )
    modes.add_argument(
        "--survey",
        action="store_true",
        help="run every chapter in memory; write results/<machine-id>-survey.json",
    )
    modes.add_argument(
        "--compat",
        default=None,
        metavar="TORCH",
        help="run every chapter under this torch release; one line each; write "
        "results/compat/torch-TORCH.json (make compat)",
    )
    modes.add_argument(
        "--compare",
        nargs="?",
        const="",
        default=None,
        metavar="REFERENCE",
        help="compare this machine's survey with the reference; run nothing",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="with --compat: exit 1 also when a chapter's outputs differ from the stored ones",
    )
    parser.add_argument(
        "--keep-going", action="store_true", help="go on with the next notebook after a failure"
    )
    parser.add_argument("--results", default=None, help="results folder (default: results/)")
    args = parser.parse_args(argv)
    root = ROOT if root is None else Path(root)
    results = Path(args.results) if args.results else None
    if args.compare is not None:
        if args.notebooks:
            parser.error("--compare runs no notebook")
        return compare(results or root / "results", Path(args.compare) if args.compare else None)
    try:
        paths = notebooks_from_args(args.notebooks, root)
    except (FileNotFoundError, ValueError) as exc:
        print(f"run_notebooks: {exc}", file=sys.stderr)
        return 1
    if args.compat is not None:
        from scripts.compat import run as compat_run

        try:
            entries, _ = compat_run.run_compat(
                paths, args.compat, root=root, runner=run_chapter, partial=bool(args.notebooks)
            )
        except (TypeError, ValueError) as exc:
            print(f"run_notebooks: {exc}", file=sys.stderr)
            return 1
        ran = all(e["status"] == "ran" for e in entries.values())
        # --strict: every chapter compared and none differing (not compared: not equal)
        equal = all("outputs" in e and not e["outputs"]["differing"] for e in entries.values())
        return 0 if ran and (equal or not args.strict) else 1
    mode = "try" if args.no_write else "survey" if args.survey else "book"
    try:
        outcomes, written = run(paths, mode, results=results, keep_going=args.keep_going)
    except ValueError as exc:  # check_before_running: refused before any chapter ran
        print(f"run_notebooks: {exc}", file=sys.stderr)
        return 1
    for path in written:
        data = read_results(path)
        print(
            f"records: {path} ({len(data['records'])} records, {path.stat().st_size} bytes)",
            flush=True,
        )
    return 0 if all(o.ok for o in outcomes) and len(outcomes) == len(paths) else 1


if __name__ == "__main__":
    sys.exit(main())
