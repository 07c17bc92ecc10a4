"""One results file per machine: its facts and the records of its comparisons (issue 22).

``results/<machine-id>.json`` (source ``"book"``) and ``results/<machine-id>-survey.json``
(source ``"survey"``) hold ``{"schema", "source", "machine", "chapters", "records"}``:
``source`` is ``"book"`` for the run that made the stored notebooks (``make execute``) and
``"survey"`` for ``run_notebooks.py --survey``; the file's name follows from its source
(:func:`results_path`), so a survey never replaces the book's reference records, even on the
machine that made them; ``machine`` is :func:`machine_facts`;
``chapters`` maps a notebook's stem to ``{"status": "ok"|"failed", "error", "seconds"}``;
``records`` are :mod:`tricks_helpers.bench.records` records; the optional ``limits`` are the
machine's measured limits (:func:`limits_record` of :func:`tricks_helpers.limits.measure_limits`:
threads, last-level cache bytes, copy bandwidth in bytes/s, matmul operations/s per dtype,
dtypes skipped with why). :func:`validate_results` checks a
file, :func:`merge_results` replaces the chapters just run and keeps the others,
:func:`compare_verdicts` says line by line where two machines' verdicts agree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scripts.results.json_file import read_json, write_json
from scripts.results.retired_verdict import upgrade_verdicts
from scripts.results.schema import check_results, file_name
from tricks_helpers._checks import check_int, check_number, check_type
from tricks_helpers.bench.records import SCHEMA_VERSION

__all__ = [
    "ISA_FLAGS",
    "X86_ISA_FLAGS",
    "ARM_ISA_FLAGS",
    "X86_ARCHS",
    "CAP_VARS",
    "machine_facts",
    "machine_id",
    "limits_record",
    "validate_limits",
    "validate_results",
    "merge_results",
    "results_path",
    "write_results",
    "read_results",
    "record_keys",
    "compare_verdicts",
]

#: CPU flags that decide which tricks pay off (bf16, int8, wide vectors), newest first: x86's,
#: then Arm's (SME and SVE matrix/vector units, the bf16 and int8 matrix-multiply extensions).
X86_ISA_FLAGS = ("amx_bf16", "amx_int8", "avx512_bf16", "avx512_vnni", "avx512f", "avx2")
ARM_ISA_FLAGS = ("sme2", "sme", "sve2", "sve", "bf16", "i8mm")
ISA_FLAGS = X86_ISA_FLAGS + ARM_ISA_FLAGS
#: Architectures whose id names an x86 ISA level (a file without ``arch`` predates the fact and
#: came from x86 Linux).
X86_ARCHS = ("x86_64", "x86")
#: Variables that cap the instruction set torch and oneDNN use (an older CPU stood in for).
CAP_VARS = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")


def _slug(text: str) -> str:
    text = re.sub(r"\((?:r|tm)\)|cpu|@.*$|processor", "", text.lower())
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "unknown"


def machine_facts(
    *,
    cpu: str | None = None,
    flags: frozenset[str] | None = None,
    environ: Mapping[str, str] | None = None,
    threads: int | None = None,
    gpu: str | None = None,
    arch: str | None = None,
) -> dict[str, Any]:
    """The facts that explain a machine's verdicts; each argument defaults to this machine.

    The CPU's name, flags and architecture come from ``tricks_helpers.env`` (``/proc/cpuinfo``
    where it exists, else torch's cpuinfo and the platform: macOS, Windows); the GPU is the
    first CUDA device, else ``"Apple MPS"`` where torch sees an Apple GPU, else ``"none"``.

    Returns:
        ``{"id", "cpu", "arch", "isa", "capped", "threads", "gpu", "torch"}``: ``arch`` is
        ``env.cpu_arch()`` (``x86_64``, ``arm64``...), ``isa`` lists the :data:`ISA_FLAGS` the
        CPU has, ``capped`` the :data:`CAP_VARS` that are set.

    Raises:
        TypeError: ``threads`` that is not an integer.
        ValueError: ``threads`` below 1 (a machine is never named ``0t``).
    """
    import torch

    from tricks_helpers import env as env_card

    if threads is not None:
        threads = check_int("machine_facts", "threads", threads, minimum=1)
    if gpu is None:
        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_properties(0).name
        else:
            gpu = "Apple MPS" if env_card.mps_available() else "none"
    flags = env_card.cpu_flags() if flags is None else flags
    environ = os.environ if environ is None else environ
    facts = {
        "cpu": env_card.cpu_model() if cpu is None else cpu,
        "arch": env_card.cpu_arch(arch),
        "isa": [f for f in ISA_FLAGS if f in flags],
        "capped": {v: environ[v] for v in CAP_VARS if environ.get(v)},
        "threads": torch.get_num_threads() if threads is None else threads,
        "gpu": gpu,
        "torch": torch.__version__,
    }
    facts["id"] = machine_id(facts)
    return facts


def machine_id(facts: Mapping[str, Any]) -> str:
    """``<cpu>-<isa>[-capped-<cap>]-<threads>t[-<gpu>]``, e.g. ``intel-xeon-8488c-amx-2t``.

    On x86 (and in a file without ``arch``, written on x86 Linux before the fact existed), the
    ISA part is the newest of ``amx``, ``avx512-bf16``, ``avx512``, ``avx2-only``, else
    ``no-avx2``. Elsewhere it names the architecture and its newest matrix/vector unit and
    bf16: ``apple-m4-arm64-sme-bf16-10t-apple-mps``, ``neoverse-v1-arm64-sve-bf16-4t``.
    """
    isa = set(facts["isa"])
    arch = facts.get("arch", "x86_64")
    if arch not in X86_ARCHS:
        unit = next((f for f in ("sme2", "sme", "sve2", "sve") if f in isa), None)
        tag = "-".join([arch] + ([unit] if unit else []) + (["bf16"] if "bf16" in isa else []))
        return _join_id(facts, tag)
    tag = next(
        (
            name
            for flag, name in (
                ("amx_bf16", "amx"),
                ("avx512_bf16", "avx512-bf16"),
                ("avx512f", "avx512"),
                ("avx2", "avx2-only"),
            )
            if flag in isa
        ),
        "no-avx2",
    )
    return _join_id(facts, tag)


def _join_id(facts: Mapping[str, Any], tag: str) -> str:
    parts = [_slug(facts["cpu"]), _slug(tag)]
    if facts["capped"]:
        parts.append(
            "capped-" + _slug("-".join(sorted({v.lower() for v in facts["capped"].values()})))
        )
    parts.append(f"{facts['threads']}t")
    if facts["gpu"] != "none":
        parts.append(_slug(facts["gpu"]))
    return "-".join(parts)


def limits_record(limits: Any) -> dict[str, Any]:
    """The part of a :class:`tricks_helpers.limits.Limits` a results file stores, validated.

    Returns:
        ``{"threads", "cache_bytes", "bandwidth", "matmul", "skipped", "probe", "where"}``
        (:meth:`tricks_helpers.limits.Limits.record`): bandwidth in bytes/s, ``matmul`` dtype
        name -> operations/s, ``skipped`` dtype name -> why, ``where`` dtype -> the kernel.
    """
    return validate_limits(limits.record())


def validate_limits(data: Any, name: str = "limits") -> dict[str, Any]:
    """Check a results file's ``limits`` object and return it.

    Raises:
        TypeError: when it or a value has the wrong type.
        ValueError: on missing or unknown keys, or a count or rate that is not positive.
    """
    check_type("validate_limits", name, data, dict)
    keys = {"threads", "cache_bytes", "bandwidth", "matmul", "skipped"}
    optional = {"probe", "where", "observed"}  # issue 39: see tricks_helpers.limits
    if not keys <= set(data) <= keys | optional:
        raise ValueError(
            f"{name}: keys must be {sorted(keys)} (optional {sorted(optional)}); missing "
            f"{sorted(keys - set(data))}, unknown {sorted(set(data) - keys - optional)}"
        )
    check_int("validate_limits", f"{name}.threads", data["threads"], minimum=1)
    check_int("validate_limits", f"{name}.cache_bytes", data["cache_bytes"], minimum=1)
    check_number(
        "validate_limits", f"{name}.bandwidth", data["bandwidth"], minimum=0, strict_minimum=True
    )
    check_type("validate_limits", f"{name}.matmul", data["matmul"], dict)
    for dtype, rate in data["matmul"].items():
        check_number(
            "validate_limits", f"{name}.matmul[{dtype!r}]", rate, minimum=0, strict_minimum=True
        )
    check_type("validate_limits", f"{name}.skipped", data["skipped"], dict)
    for dtype, why in data["skipped"].items():
        check_type("validate_limits", f"{name}.skipped[{dtype!r}]", why, str)
    return data


def validate_results(data: Any, name: str = "results") -> dict[str, Any]:
    """Check a results file's content (every record and claim included) and return it.

    One definition: the results file's schema (``scripts.results.schema.check_results``, built
    from the package's record and claim fields) says which keys, sources and statuses a file
    may hold; nothing is checked twice here.

    Raises:
        TypeError: when it or a part of it has the wrong type (named: ``results.records[0]``).
        ValueError: on anything the schema refuses (another schema version, an unknown source
            or status, missing machine facts, text limits, each record's ratio, verdict and
            coverage against its interval and rounds, a record or claim of a chapter the file
            does not list, a claim twice), or bad ``limits`` (see :func:`validate_limits`).
    """
    if isinstance(data, dict) and isinstance(data.get("limits"), dict):
        validate_limits(data["limits"], f"{name}.limits")  # its own words; the schema follows
    return check_results(data, name)


def merge_results(
    old: Mapping[str, Any] | None,
    machine: Mapping[str, Any],
    chapters: Mapping[str, Mapping[str, Any]],
    records: list[dict[str, Any]],
    source: str,
    limits: Mapping[str, Any] | None = None,
    claims: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``old`` with the chapters in ``chapters`` replaced (their records and claims too),
    validated.

    ``limits`` (a :func:`limits_record`) replaces ``old``'s; without it, ``old``'s are kept.
    ``claims``: the claims those chapters decided (``tricks_helpers.claims``); a file holds a
    ``claims`` list once any chapter recorded one.
    """
    kept_chapters = {k: v for k, v in (old or {}).get("chapters", {}).items() if k not in chapters}
    kept = [r for r in (old or {}).get("records", []) if r["chapter"] not in chapters]
    merged = {
        "schema": SCHEMA_VERSION,
        "source": source,
        "machine": dict(machine),
        "chapters": dict(sorted({**kept_chapters, **chapters}.items())),
        "records": sorted(kept + list(records), key=lambda r: r["chapter"]),
    }
    limits = (old or {}).get("limits") if limits is None else limits
    if limits is not None:
        merged["limits"] = dict(limits)
    kept_claims = [c for c in (old or {}).get("claims", []) if c["chapter"] not in chapters]
    if kept_claims or claims:
        merged["claims"] = sorted(kept_claims + list(claims or []), key=lambda c: c["chapter"])
    return validate_results(merged)


def read_results(path: str | Path) -> dict[str, Any]:
    """Read and validate one results file.

    Raises:
        ValueError: when it is not JSON or not valid (see :func:`validate_results`).
    """
    path = Path(path)
    data = upgrade_verdicts(read_json(path))  # a file of the three-verdict book: re-decided
    return validate_results(data, path.name)


def results_path(folder: str | Path, machine_id: str, source: str) -> Path:
    """Where a machine's results file of ``source`` lives in ``folder``.

    Returns:
        ``folder/<machine_id>.json`` for ``"book"``, ``folder/<machine_id>-survey.json`` for
        ``"survey"``: the two never share a name.

    Raises:
        TypeError: when ``machine_id`` is not a string; ValueError: on an unknown ``source``
            or a machine id that is not a plain name (``../x``, an absolute path).
    """
    return Path(folder) / file_name(machine_id, source)


def write_results(data: Mapping[str, Any], folder: str | Path) -> Path:
    """Validate ``data`` and write it to :func:`results_path` (temporary name, then rename).

    A survey's file and the book's are named apart, so neither can replace the other.
    """
    data = validate_results(dict(data))
    path = results_path(folder, data["machine"]["id"], data["source"])
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_json(path, data)


def record_keys(records: list[Mapping[str, Any]]) -> dict[tuple[str, str, int], dict]:
    """Records by ``(chapter, label, n)``: the n-th record of that label in that chapter."""
    out: dict[tuple[str, str, int], dict] = {}
    seen: dict[tuple[str, str], int] = {}
    for rec in records:
        n = seen.get((rec["chapter"], rec["label"]), 0)
        seen[rec["chapter"], rec["label"]] = n + 1
        out[(rec["chapter"], rec["label"], n)] = dict(rec)
    return out


def compare_verdicts(mine: Mapping[str, Any], reference: Mapping[str, Any]) -> tuple[str, int]:
    """Line by line, where ``mine`` agrees with ``reference`` (two results files' contents).

    Each comparison once (``results.kinds.unique_records``: one recorded under its table
    label and its chart label is one).

    Returns:
        The text (one line per reference comparison: ``agree``, ``DIFFERS`` or ``missing``)
        and the number of lines that differ or are missing.
    """
    from scripts.results.kinds import unique_records

    here = record_keys(unique_records(mine["records"]))
    ref = record_keys(unique_records(reference["records"]))
    lines = [f"reference: {reference['machine']['id']}; this machine: {mine['machine']['id']}"]
    bad = 0
    for key, r in ref.items():
        what = f"{r['chapter']}: {r['label']}"
        m = here.get(key)
        if m is None:
            failed = mine["chapters"].get(r["chapter"], {}).get("status") == "failed"
            lines.append(f"missing  {what} ({'chapter failed' if failed else 'not run here'})")
            bad += 1
        elif m["verdict"] == r["verdict"]:
            lines.append(f"agree    {what}: {r['verdict']}")
        else:
            lines.append(
                f"DIFFERS  {what}: reference {r['verdict']} {r['ratio']:.2f}x, "
                f"here {m['verdict']} {m['ratio']:.2f}x"
            )
            bad += 1
    lines.append(f"{len(ref) - bad} of {len(ref)} reference verdicts agree")
    return "\n".join(lines), bad
