"""Re-execute the book's notebooks top to bottom and report each one's time.

    python scripts/run_notebooks.py [NOTEBOOK ...]                 execute in place
    python scripts/run_notebooks.py --no-write --keep-going [...]  only try them (make newest)

Default: every chapter of ``_toc.yml``, in reading order. Uses the current Python
environment's kernel (like ``pytest --nbval-current-env``) and runs each notebook in its own
directory. In place, it stops at the first failing cell and leaves that notebook on disk
untouched: this is the only way stored outputs are made. With ``--no-write`` nothing is
written: the executed copy stays in memory, which is how ``make newest`` checks that every
chapter still runs under another torch without comparing outputs. ``--keep-going`` goes on
with the next notebook after a failure. A summary table ends the run: one line per notebook
with its status, time, and the first failing cell with its error.

Every comparison a chapter shows is also recorded (``TRICKS_RECORDS``, see
``tricks_helpers.bench.records``): when notebooks are executed in place, their records
replace those chapters' records in ``results/<machine-id>.json`` beside ``book/`` (source
``"book"``: the reference run the results page and ``make survey-compare`` read), with this
machine's limits (``tricks_helpers.limits.measure_limits``, about 2.5 s, measured once before
the first notebook). Cell outputs are the same either way.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

from find_notebooks import notebooks_from_args
from machine_records import (
    limits_record,
    machine_facts,
    merge_results,
    read_results,
    results_path,
    write_results,
)
from notebook_run import execute_notebook
from survey import records_env
from tricks_helpers.bench.records import read_records
from tricks_helpers.limits import measure_limits


@dataclass
class Outcome:
    """What executing one notebook gave."""

    name: str
    seconds: float
    error: str = ""  # empty when every cell ran

    @property
    def ok(self) -> bool:
        return not self.error

    def line(self, width: int) -> str:
        status = "ok" if self.ok else "FAILED"
        text = f"{self.name:<{width}}  {status:<6}  {self.seconds:6.1f} s"
        return f"{text}  {self.error}" if self.error else text


def execute(
    path: Path, *, write: bool = True, timeout: int = 600, env: dict | None = None
) -> Outcome:
    """Execute ``path`` top to bottom; write it back only if ``write`` and every cell ran.

    ``env``: the kernel's environment (default: this process's). The executor is
    ``tricks_helpers.notebook_run.execute_notebook``, the survey's too.
    """
    done = execute_notebook(path, timeout=timeout, env=env)
    if write and done.ok:
        tmp = path.with_suffix(".ipynb.tmp")
        nbformat.write(done.nb, tmp)
        tmp.replace(path)
    return Outcome(path.name, done.seconds, done.error)


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


def write_book_records(
    chapters: dict, records: list, folder: Path, limits: dict | None = None
) -> Path:
    """Merge the stored notebooks' records into ``folder/<machine-id>.json`` (source "book").

    ``limits``: a ``machine_records.limits_record`` replacing the file's (None: kept).
    """
    machine = machine_facts()
    target = results_path(folder, machine["id"], "book")
    old = read_results(target) if target.exists() else None
    return write_results(merge_results(old, machine, chapters, records, "book", limits), folder)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks (default: every chapter)")
    parser.add_argument(
        "--no-write", action="store_true", help="execute in memory only; never write a notebook"
    )
    parser.add_argument(
        "--keep-going", action="store_true", help="go on with the next notebook after a failure"
    )
    args = parser.parse_args(argv)
    try:
        paths = notebooks_from_args(args.notebooks)
    except (FileNotFoundError, ValueError) as exc:
        print(f"run_notebooks: {exc}", file=sys.stderr)
        return 1
    outcomes = []
    done: dict[Path, tuple[dict, list]] = {}  # results folder -> chapters, records
    tmp = tempfile.TemporaryDirectory(prefix="records-")
    limits = None if args.no_write else limits_record(measure_limits())
    for path in paths:
        print(f"executing {path.name} ...", flush=True)
        records_file = Path(tmp.name) / f"{path.stem}.jsonl"
        env = records_env(records_file, path.stem)
        outcome = execute(path, write=not args.no_write, env=env)
        outcomes.append(outcome)
        if outcome.ok:
            folder = path.resolve().parent.parent / "results"
            chapters, records = done.setdefault(folder, ({}, []))
            chapters[path.stem] = {
                "status": "ok",
                "error": "",
                "seconds": round(outcome.seconds, 1),
            }
            records += read_records(records_file) if records_file.exists() else []
        print(
            f"  {'done' if outcome.ok else 'FAILED'} in {outcome.seconds:.1f} s"
            + (f": {outcome.error}" if outcome.error else ""),
            flush=True,
        )
        if not outcome.ok and not args.keep_going:
            break
    print(summary(outcomes), flush=True)
    for folder, (chapters, records) in done.items() if not args.no_write else ():
        print(f"records: {write_book_records(chapters, records, folder, limits)}", flush=True)
    tmp.cleanup()
    return 0 if all(o.ok for o in outcomes) and len(outcomes) == len(paths) else 1


if __name__ == "__main__":
    sys.exit(main())
