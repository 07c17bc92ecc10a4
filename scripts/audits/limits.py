"""Rules ``limits-one-set`` and ``limits-above-rate`` of ``scripts/audits/notebooks.py``
(issue 39: one machine, one set of limits).

- ``limits-one-set``: every stored chapter prints the same limits (the ``[hardware]`` lines of
  ``tricks_helpers.limits.Limits.lines``: the copy bandwidth and each dtype's matmul rate, as
  printed, ``~`` and three significant digits), and they are the limits recorded in the
  machine's results file of the stored run (the one ``results/*.json`` whose ``source`` is
  ``"book"``). Two chapters printing different limits of one machine, one chapter printing two
  values of one limit (a limit raised mid-page), or a printed limit that is not the recorded
  one (a chapter run before the record was raised) is a hit: execute those chapters again.
- ``limits-above-rate``: in every results file, no rate a chapter recorded against a limit
  (``limits.observed``: chapter -> limit name -> operations or bytes per second) is above that
  limit (a limit is the highest rate observed on its machine).

    python -m scripts.audits.limits [RESULTS_DIR]     # prints the hits, exit 1 on any

Only the standard library and this repository's scripts are used.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from scripts.book.find_notebooks import ROOT, notebooks_from_args
from scripts.book.notebook_cells import code_outputs, output_text

LIMITS_ONE_SET = "limits-one-set"
LIMITS_ABOVE_RATE = "limits-above-rate"

_BANDWIDTH = re.compile(r"^\[hardware\] memory bandwidth \([^)]*\): ~(?P<value>\S+) GB/s$")
_MATMUL = re.compile(
    r"^\[hardware\] matmul (?P<name>[A-Za-z0-9_]+) \([^)]*\): ~(?P<value>\S+) G(?:FL)?OP/s$"
)


def shown(value: float) -> str:
    """A rate (in G/s) as ``fmt_measured`` prints it: three significant digits, no ``~``."""
    from tricks_helpers.bench import fmt_measured

    return fmt_measured(value).removeprefix("~")


def printed_limits(cells: list[dict]) -> dict[str, set[str]]:
    """Limit name (``bandwidth`` or a dtype) -> every value a notebook's stored outputs print
    for it (as printed, in G/s)."""
    out: dict[str, set[str]] = {}
    for _, output in code_outputs(cells):
        for line in output_text(output).splitlines():
            found = _BANDWIDTH.match(line)
            name = "bandwidth" if found else None
            if not found:
                found = _MATMUL.match(line)
                name = found["name"] if found else None
            if found and name:
                out.setdefault(name, set()).add(found["value"])
    return out


def one_set_problems(
    printed: Mapping[str, Mapping[str, set[str]]], recorded: Mapping[str, Any] | None
) -> list[str]:
    """Hits of ``limits-one-set``: ``printed`` is chapter -> :func:`printed_limits`;
    ``recorded`` the stored run's results-file ``limits`` (None: none recorded)."""
    problems = []
    want: dict[str, str] = {}
    if recorded:
        want["bandwidth"] = shown(recorded["bandwidth"] / 1e9)
        want.update({k: shown(v / 1e9) for k, v in recorded["matmul"].items()})
    by_name: dict[str, dict[str, str]] = {}  # limit -> value -> first chapter printing it
    for chapter, limits in sorted(printed.items()):
        for name, values in sorted(limits.items()):
            if len(values) > 1:
                problems.append(
                    f"{LIMITS_ONE_SET}: {chapter} prints {len(values)} values of the {name} "
                    f"limit ({', '.join(sorted(values))}): one machine, one set"
                )
            for value in sorted(values):
                by_name.setdefault(name, {}).setdefault(value, chapter)
                if recorded and name in want and value != want[name]:
                    problems.append(
                        f"{LIMITS_ONE_SET}: {chapter} prints the {name} limit ~{value}, the "
                        f"machine's recorded limit is ~{want[name]}: execute it again"
                    )
                elif recorded and name not in want:
                    problems.append(
                        f"{LIMITS_ONE_SET}: {chapter} prints a {name} limit, none is recorded"
                    )
    for name, values in sorted(by_name.items()):
        if len(set(values.values())) > 1:  # one chapter's two values: said above
            seen = "; ".join(f"~{v} in {c}" for v, c in sorted(values.items()))
            problems.append(f"{LIMITS_ONE_SET}: chapters print different {name} limits: {seen}")
    return problems


def above_rate_problems(results: Mapping[str, Any], name: str = "results") -> list[str]:
    """Hits of ``limits-above-rate`` in one results file's content."""
    limits = results.get("limits")
    if not limits:
        return []
    problems = []
    for chapter, rates in sorted(limits.get("observed", {}).items()):
        for what, rate in sorted(rates.items()):
            limit = limits["bandwidth"] if what == "bandwidth" else limits["matmul"].get(what)
            if limit is None:
                problems.append(
                    f"{LIMITS_ABOVE_RATE}: {name}: {chapter} recorded a {what} rate, no limit"
                )
            elif rate > limit * (1 + 1e-12):
                problems.append(
                    f"{LIMITS_ABOVE_RATE}: {name}: {chapter} reached {what} at {rate / limit:.3g}x "
                    f"the machine's limit ({rate / 1e9:.4g} > {limit / 1e9:.4g} G/s)"
                )
    return problems


def limits_problems(notebooks: Iterable[Path], results_dir: Path) -> list[str]:
    """Both rules over the stored ``notebooks`` and every results file of ``results_dir``."""
    problems, recorded = [], None
    for path in sorted(Path(results_dir).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        problems += above_rate_problems(data, path.name)
        if data.get("source") == "book":
            recorded = data.get("limits")
    printed = {}
    for path in notebooks:
        cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
        found = printed_limits(cells)
        if found:
            printed[Path(path).stem] = found
    return problems + one_set_problems(printed, recorded)


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    args = sys.argv[1:] if argv is None else argv
    results = Path(args[0]) if args else root / "results"
    problems = limits_problems(notebooks_from_args([], root), results)
    for line in problems:
        print(f"PROBLEM {line}")
    print(f"limits audit: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
