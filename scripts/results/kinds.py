"""What decides the tricks on a machine, and each machine's decisions in one short cell (issue 40).

The results page and the chapter pages key every recorded machine by the features the book's
claims name as their conditions (native bf16, VNNI, AMX, a GPU, the cores), not by its id; a run
whose instruction set was capped (``machine.capped``) is an emulation of an older CPU on the
machine it ran on, and is named so. A comparison a chapter records twice (its verdict line, then
its table or chart row, under another label) is one comparison (:func:`unique_records`). A
survey's chapter is *stale* where the chapter's code changed since the survey's commit
(:func:`stale_chapters`): a results file records no commit, so ``results/survey-code.txt``
holds each contributed survey's chapters' code hashes at its commit (written once by
``python -m scripts.results.kinds results/FILE COMMIT``); a survey it does not name is stale
where the book's reference run now records other claims for a chapter.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tricks_helpers.bench import fmt_ratio

__all__ = [
    "claim_cell",
    "code_hash",
    "survey_code",
    "kind_name",
    "kind_facts",
    "record_cell",
    "stale_chapters",
    "unique_records",
]

_BF16 = {"avx512_bf16", "amx_bf16", "avx_ne_convert", "bf16", "sve_bf16"}
_VNNI = {"avx512_vnni", "avx_vnni", "amx_int8", "i8mm", "dotprod"}
_AMX = {"amx_tile", "amx_bf16", "amx_int8"}
#: the speed-up and interval at the start of a measured claim's evidence
_MAGNITUDE = re.compile(r"(\d[\d.,]*x \[[^\]]*\])")
#: a claim decided from several comparisons: "2 of 2 FASTER", "4 of 5 not FASTER"
_COUNTED = re.compile(r"^(\d+ of \d+ (?:not )?[A-Z][A-Z ]*[A-Z])")


def _features(f: Mapping[str, Any]) -> dict[str, bool]:
    isa = set(f["machine"].get("isa", []))
    return {
        "bf16": bool(isa & _BF16),
        "vnni": bool(isa & _VNNI),
        "amx": bool(isa & _AMX),
        "gpu": f["machine"].get("gpu", "none") not in ("", "none"),
    }


def kind_name(f: Mapping[str, Any]) -> str:
    """A machine's short name by what decides the tricks, e.g. ``native bf16 + VNNI, 2 cores``;
    a capped run: ``older-CPU emulation (AVX2 host capped), 2 cores``."""
    m = f["machine"]
    cores = f"{m.get('threads', '?')} cores"
    if m.get("capped"):
        return f"older-CPU emulation (capped), {cores}"
    ft = _features(f)
    if ft["gpu"]:
        return f"GPU {m['gpu']}, {cores}"
    if ft["amx"]:
        return f"AMX (bf16 + int8), {cores}"
    if ft["bf16"]:
        return f"native bf16{' + VNNI' if ft['vnni'] else ''}, {cores}"
    if ft["vnni"]:
        return f"VNNI, no native bf16, {cores}"
    return f"{'AVX2' if 'avx2' in m.get('isa', []) else 'no AVX2'} only, {cores}"


def kind_facts(f: Mapping[str, Any]) -> str:
    """The features in words, then the CPU, torch and the run's source."""
    m = f["machine"]
    ft = _features(f)
    yes = {True: "yes", False: "no"}
    text = (
        f"native bf16: {yes[ft['bf16']]}; VNNI: {yes[ft['vnni']]}; AMX: {yes[ft['amx']]}; "
        f"GPU: {m['gpu']}; {m['threads']} cores ({m['cpu']}, {', '.join(m['isa']) or 'no AVX2'}; "
        f"torch {m['torch']})"
    )
    if m["capped"]:
        caps = ", ".join(f"{k}={v}" for k, v in m["capped"].items())
        text += (
            f". Not another machine: the book's own CPU with its instruction set capped ({caps}), "
            "an emulation of an older CPU"
        )
    source = "the book's stored outputs" if f["source"] == "book" else "a survey (make survey)"
    return text + f"; {source}"


def unique_records(records: Iterable[Mapping[str, Any]]) -> list[dict]:
    """Each comparison once: a record whose measurement (chapter, both times, ratio and
    interval) repeats an earlier one is the same comparison under another label (a verdict
    line and its table or chart row) and is dropped; the first label is kept, with the
    repeat's ``why`` where the first has none."""
    seen: dict[tuple, dict] = {}
    for rec in records:
        key = (
            rec["chapter"],
            rec["baseline_s"],
            rec["trick_s"],
            rec["ratio"],
            rec["lo"],
            rec["hi"],
        )
        if key not in seen:
            seen[key] = dict(rec)
        elif rec.get("why") and not seen[key].get("why"):
            seen[key]["why"] = rec["why"]
    return list(seen.values())


def record_cell(rec: Mapping[str, Any] | None) -> str:
    """``FASTER 2.55x [2.53-2.60]``, or ``-`` where the run recorded no such comparison."""
    if rec is None:
        return "-"
    lo = fmt_ratio(rec["lo"]) if rec["lo"] >= 0.005 else "0.00"
    return f"{rec['verdict']} {fmt_ratio(rec['ratio'])}x [{lo}-{fmt_ratio(rec['hi'])}]"


def claim_cell(claim: Mapping[str, Any] | None, stale: bool = False) -> str:
    """A claim's decision with its magnitude where it was measured: ``HELD 3.77x [3.6-3.9]``;
    ``-`` where the run recorded no such claim; ``(stale)`` after a stale chapter's."""
    if claim is None:
        return "-"
    text = claim["status"]
    evidence = claim.get("evidence", "") if claim.get("measured") else ""
    m = _MAGNITUDE.search(evidence)
    counted = _COUNTED.match(evidence)
    if m:
        text += f" {m[1]}"
    elif counted:
        text += f" ({counted[1]})"
    return text + (" (stale)" if stale else "")


COMMITS_FILE = "survey-code.txt"


def _claim_keys(f: Mapping[str, Any]) -> dict[str, set]:
    out: dict[str, set] = {}
    for c in f.get("claims", []):
        out.setdefault(c["chapter"], set()).add(c["key"])
    return out


def code_hash(notebook_json: str) -> str:
    """SHA-256 (first 16 hex digits) of a notebook's code cells' sources, the Colab set-up
    cell (``remove-cell``, re-stamped at each release) left out."""
    nb = json.loads(notebook_json)
    code = [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in nb["cells"]
        if c["cell_type"] == "code" and "remove-cell" not in c.get("metadata", {}).get("tags", [])
    ]
    return hashlib.sha256(json.dumps(code).encode("utf-8")).hexdigest()[:16]


def survey_code(root: Path) -> dict[str, dict[str, str]]:
    """``{results file name: {chapter: code hash at the survey's commit}}`` from
    ``results/survey-code.txt`` (lines ``<file> <commit> <chapter> <hash>``; empty where absent).
    Written once per contributed survey by ``python -m scripts.results.kinds FILE COMMIT``, so
    the page never needs the git history (a shallow clone has none)."""
    path = root / "results" / COMMITS_FILE
    out: dict[str, dict[str, str]] = {}
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("#", 1)[0].split()
        if len(parts) == 4 and re.fullmatch(r"[0-9a-f]{16}", parts[3]):
            out.setdefault(parts[0], {})[parts[2]] = parts[3]
    return out


def chapter_hashes_at(root: Path, commit: str) -> dict[str, str]:
    """Each chapter's :func:`code_hash` at ``commit`` (git), for ``survey-code.txt``."""
    out = {}
    for path in sorted((root / "book").glob("[0-9][0-9]_*.ipynb")):
        shown = subprocess.run(
            ["git", "show", f"{commit}:book/{path.name}"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if shown.returncode == 0:
            out[path.stem] = code_hash(shown.stdout)
    return out


def stale_chapters(
    f: Mapping[str, Any],
    reference: Mapping[str, Any] | None,
    root: Path | None = None,
    hashes: Mapping[str, str] | None = None,
) -> list[str]:
    """The chapters of survey ``f`` whose code changed since it was run (none for the reference).

    With ``hashes`` (its chapters' code hashes at its commit, :func:`survey_code`) and the
    checkout ``root``: each chapter whose code cells now hash otherwise (or none was recorded).
    Without: each chapter the reference run now records other claims for.
    """
    if f["source"] == "book":
        return []
    ran = sorted(k for k, v in f.get("chapters", {}).items() if v.get("status") == "ok")
    if hashes and root is not None:
        out = []
        for ch in ran:
            now = root / "book" / f"{ch}.ipynb"
            if not now.is_file() or hashes.get(ch) != code_hash(now.read_text(encoding="utf-8")):
                out.append(ch)
        return out
    if reference is None:
        return []
    mine, ref = _claim_keys(f), _claim_keys(reference)
    return [ch for ch in ran if ch in ref and mine.get(ch, set()) != ref[ch]]


def main(argv: list[str] | None = None) -> int:
    """``python -m scripts.results.kinds results/FILE COMMIT``: record the survey's commit and
    its chapters' code hashes there into ``results/survey-code.txt`` (replacing its lines)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m scripts.results.kinds results/FILE COMMIT", file=sys.stderr)
        return 2
    root = Path(__file__).resolve().parents[2]
    name, commit = Path(args[0]).name, args[1]
    hashes = chapter_hashes_at(root, commit)
    if not hashes:
        print(f"kinds: git shows no chapter at {commit}", file=sys.stderr)
        return 1
    path = root / "results" / COMMITS_FILE
    old = (
        path.read_text(encoding="utf-8").splitlines()
        if path.is_file()
        else [
            "# Each contributed survey's chapters' code hashes at the commit it was run at",
            "# (python -m scripts.results.kinds results/FILE COMMIT):",
            "# <file> <commit> <chapter> <hash>",
        ]
    )
    keep = [line for line in old if not line.startswith(name + " ")]
    keep += [f"{name} {commit} {ch} {h}" for ch, h in hashes.items()]
    path.write_text("\n".join(keep) + "\n", encoding="utf-8")
    print(f"kinds: {len(hashes)} chapters of {name} at {commit} into results/{COMMITS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
