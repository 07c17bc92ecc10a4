"""Probe the modules of issue 42 with bad inputs: what a record, a claim, a skipped line may hold
(``tricks_helpers.fields`` and its users), the checkpoint reader, the strict JSON reader and the
results schema, the runner's early checks, ``python -m tricks_helpers.ddp`` and a deleted store.

Each case runs through ``scripts/probes/harness.py``: in a forked child with a time limit, classed
``correct``, ``clear error``, ``obscure``, ``silent wrong``, ``crash`` or ``hang``.

Run: ``python -m scripts.probes.records [label filter]`` (one line per case, then the counts;
exit status 1 when any case is silent wrong, a crash or a hang).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from scripts.probes.harness import ERROR, classify_outcome, probe_command

_DOCUMENTED = (TypeError, ValueError, OSError, RuntimeError)
_CONTEXT = (
    "validate_record",
    "Claim",
    "skipped",
    "label",
    "load_checkpoint",
    ".json",
    ".pt",
    "records",
    "ratio",
    "--",
    "share the chapter name",
    "process group",
    "one_line",
    "chapter name",
)
classify = partial(classify_outcome, documented=_DOCUMENTED, context=_CONTEXT)


def _comparison(label: str = "x", speedup: float = 2.0) -> Any:
    from tricks_helpers import bench

    return bench.comparison_from_times(
        label, [speedup * 1e-3] * 6, [1e-3] * 6, threads=1, show=False
    )


def _record(**change: Any) -> Any:
    from tricks_helpers.bench.records import validate_record

    return validate_record({**_comparison().record(chapter="01_x"), **change})


def _claim(**change: Any) -> Any:
    from tricks_helpers import claims

    args = {"key": "k", "advice": "a", "condition": "any CPU", "status": claims.HELD}
    args.update(evidence="e", measured=False)
    args.update(change)
    return claims.Claim(**args)


def _skipped(section: str = "int4", needs: str = "torchao >= 0.18", have: str = "0.16") -> Any:
    import io

    from tricks_helpers import notebook

    return notebook.skipped(section, needs, have, stream=io.StringIO())


def _checkpoint(t: Path) -> Path:
    from tricks_helpers import resume

    return resume.save_checkpoint(resume.new_run(0), t / "ck.pt")


def _load(t: Path, plant: Callable[[Path], Path]) -> Any:
    from tricks_helpers import resume

    return resume.load_checkpoint(plant(t))


def _fifo(t: Path, name: str) -> Path:
    os.mkfifo(t / name)
    return t / name


def _link(t: Path, name: str, target: str) -> Path:
    (t / name).symlink_to(target)
    return t / name


def _sparse(t: Path, name: str, size: int, head: bytes = b"") -> Path:
    with open(t / name, "wb") as f:
        f.write(head)
        f.truncate(size)
    return t / name


def _grown(t: Path) -> Path:
    path = _checkpoint(t)
    with open(path, "ab") as f:
        f.write(b"\0")
    return path


def _huge_valid_header(t: Path) -> Path:
    path = _checkpoint(t)
    with open(path, "r+b") as f:
        f.truncate(3 * 2**30)
    return path


def _text(t: Path, name: str, text: str | bytes) -> Path:
    path = t / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def _read_json(t: Path, plant: Callable[[Path], Path]) -> Any:
    from scripts.results import json_file

    return json_file.read_json(plant(t))


def _results(n: int = 1) -> dict:
    from scripts.book import machine_records

    facts = machine_records.machine_facts(
        cpu="Probe CPU", flags=frozenset({"avx2"}), environ={}, threads=2, gpu="none", arch="x86_64"
    )
    records = [_comparison(f"row {i}").record(chapter="01_x") for i in range(n)]
    ok = {"status": "ok", "error": "", "seconds": 1.0}
    return machine_records.merge_results(None, facts, {"01_x": ok}, records, "survey")


def _check(change: Callable[[dict], Any]) -> Any:
    from scripts.results import schema

    data = _results()
    change(data)
    return schema.check_results(data, "probe-survey.json")


def _check_file(t: Path, text: Callable[[dict], str], link: bool = False) -> Any:
    from scripts.results import check, schema

    data = _results()
    name = schema.file_name(data["machine"]["id"], "survey")
    target = t / ("real.json" if link else name)
    target.write_text(text(data), encoding="utf-8")
    if link:
        (t / name).symlink_to(target)
    return check.check_file(t / name, contributed=True)


def _before(t: Path, kind: str) -> Any:
    from scripts.book import machine_records, run_notebooks

    machine = machine_records.machine_facts()
    paths = [t / "book" / "01_a.ipynb"]
    results = t / "results"
    if kind == "results is a file":
        results.write_text("x")
    elif kind == "previous file not JSON":
        results.mkdir()
        machine_records.results_path(results, machine["id"], "survey").write_text("{")
    elif kind == "two notebooks, one stem":
        paths.append(t / "extra" / "01_a.ipynb")
    elif kind == "a stem with a space":
        paths = [t / "book" / "01 a.ipynb"]
    return run_notebooks.check_before_running(paths, "survey", results, machine)


def _ddp(t: Path, *argv: str, env: dict | None = None) -> Any:
    """``python -m tricks_helpers.ddp ...``: its last stderr line as an error, or its status."""
    full = {**os.environ, "RANK": "0", "WORLD_SIZE": "1", **(env or {})}
    done = subprocess.run(
        [sys.executable, "-m", "tricks_helpers.ddp", *argv, "--out", str(t)],
        capture_output=True,
        text=True,
        env=full,
        timeout=110,
    )
    if done.returncode:
        lines = done.stderr.strip().splitlines() or ["(nothing on stderr)"]
        raise RuntimeError(lines[-1])
    return done.returncode


def _deleted_store(t: Path, fmt: str) -> str:
    from tricks_helpers import storage

    storage.write(t / "s", [(f"k{i}", bytes([i]) * 10) for i in range(5)], fmt)
    ds = storage.StoreDataset(t / "s")
    shutil.rmtree(t / "s")
    try:
        ds[1]
    except storage.StoreReplacedError as exc:
        return str(exc)
    return "no error"


def _concurrent(write: Callable[[Path, Any], Any], t: Path) -> int:
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        for i in range(60):
            try:
                write(t / "a.json", {"n": n, "i": i})
            except OSError as exc:
                errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return len(errors)


def _cases() -> list[tuple[str, Callable[[Path], Any], Any]]:
    from scripts.compat import outcome as compat_outcome
    from scripts.results import json_file
    from tricks_helpers import claims, ddp, fields

    c: list[tuple[str, Callable[[Path], Any], Any]] = []
    add = c.append
    # ---- what a record, a claim, a skipped line may hold (made, refused at once)
    for name, bad in [
        ("301 characters", "x" * 301),
        ("a tab", "a\tb"),
        ("a carriage return", "a\rb"),
        ("a zero-width space", "a\u200bb"),
        ("a right-to-left override", "a\u202eb"),
        ("a bidi isolate", "a\u2067b"),
        ("a byte-order mark", "a\ufeffb"),
        ("a C1 control", "a\x85b"),
        ("only blanks", "   "),
    ]:
        add((f"validate_record label {name}", lambda t, b=bad: _record(label=b), ERROR))
        add((f"compare label {name}", lambda t, b=bad: _comparison(b), ERROR))
        add((f"Claim advice {name}", lambda t, b=bad: _claim(advice=b), ERROR))
    add(("validate_record label 300 characters", lambda t: _record(label="x" * 300), bool))
    add(("validate_record why 301", lambda t: _record(why="w" * 301), ERROR))
    add(("validate_record chapter ../x", lambda t: _record(chapter="../x"), ERROR))
    add(("validate_record device a tag", lambda t: _record(device="<b>cpu</b>"), ERROR))
    add(("Claim condition 201", lambda t: _claim(condition="c" * 201), ERROR))
    add(("Claim status MAYBE", lambda t: _claim(status="MAYBE"), ERROR))
    add(("Claim key with a space", lambda t: _claim(key="a b"), ERROR))
    add(("Claim.record chapter a/b", lambda t: _claim().record("a/b"), ERROR))
    add(("Claim.record chapter None", lambda t: _claim().record(None), ERROR))
    long_pair = [_comparison("s" * 200, 0.5), _comparison("t" * 200, 0.5)]
    add(
        (
            "from_verdicts two long labels",
            lambda t: claims.from_verdicts("k", "a", long_pair),
            ERROR,
        )
    )
    add(("skipped section 201", lambda t: _skipped(section="s" * 201), ERROR))
    add(("skipped needs with a tab", lambda t: _skipped(needs="a\tb"), ERROR))
    add(("skipped reason over 300", lambda t: _skipped(needs="n" * 150, have="h" * 150), ERROR))
    add(("skipped a fine line", lambda t: _skipped(), lambda got: got.startswith("[skipped] ")))
    add(("one_line a tab and bidi", lambda t: fields.one_line("a\t\u202eb", 10), "a b".__eq__))
    add(("one_line None", lambda t: fields.one_line(None, 10), ERROR))
    # ---- the checkpoint reader
    for name, plant in [
        ("a FIFO", lambda t: _fifo(t, "ck.pt")),
        ("a link to /dev/zero", lambda t: _link(t, "ck.pt", "/dev/zero")),
        ("a 3 GiB sparse file", lambda t: _sparse(t, "ck.pt", 3 * 2**30)),
        ("3 GiB, a valid header", _huge_valid_header),
        ("one byte longer than declared", _grown),
        ("empty", lambda t: _text(t, "ck.pt", b"")),
        ("a folder", lambda t: (t / "ck.pt").mkdir() or t / "ck.pt"),
        ("missing", lambda t: t / "ck.pt"),
        ("a JSON file", lambda t: _text(t, "ck.pt", "{}")),
        ("a link to a missing file", lambda t: _link(t, "ck.pt", str(t / "nothing"))),
    ]:
        add((f"load_checkpoint {name}", partial(_load, plant=plant), ERROR))
    add(("load_checkpoint a good file", partial(_load, plant=_checkpoint), lambda run: True))
    # ---- the one strict JSON reader
    for name, plant in [
        ("a repeated key", lambda t: _text(t, "a.json", '{"a": 1, "a": 2}')),
        ("NaN", lambda t: _text(t, "a.json", '{"a": NaN}')),
        ("-Infinity", lambda t: _text(t, "a.json", "[-Infinity]")),
        ("a 5000-digit integer", lambda t: _text(t, "a.json", "9" * 5000)),
        ("a 5000-digit float", lambda t: _text(t, "a.json", "0." + "1" * 5000)),
        ("nesting 100,000 deep", lambda t: _text(t, "a.json", "[" * 10**5 + "]" * 10**5)),
        ("nesting 50 deep", lambda t: _text(t, "a.json", "[" * 50 + "]" * 50)),
        ("bad UTF-8", lambda t: _text(t, "a.json", b'{"a": "\xff"}')),
        ("a byte-order mark", lambda t: _text(t, "a.json", "\ufeff{}")),
        ("a FIFO", lambda t: _fifo(t, "a.json")),
        ("a link to /dev/zero", lambda t: _link(t, "a.json", "/dev/zero")),
        ("20 MB sparse", lambda t: _sparse(t, "a.json", 20 * 2**20)),
        ("a folder", lambda t: (t / "a.json").mkdir() or t / "a.json"),
        ("missing", lambda t: t / "a.json"),
    ]:
        add((f"read_json {name}", partial(_read_json, plant=plant), ERROR))
    add(
        ("read_json good", partial(_read_json, plant=lambda t: _text(t, "a.json", "{}")), {}.__eq__)
    )
    # ---- the results schema and the contributed-file check
    add(
        (
            "check_results ratio 1e300, times 0.91x",
            lambda t: _check(
                lambda d: d["records"][0].update(
                    ratio=1e300, lo=1e300, hi=1e300, baseline_s=9.1e-4, trick_s=1e-3
                )
            ),
            ERROR,
        )
    )
    add(
        (
            "check_results ratio 2, times 0.91x",
            lambda t: _check(lambda d: d["records"][0].update(baseline_s=9.1e-4, trick_s=1e-3)),
            ERROR,
        )
    )
    add(
        (
            "check_results 10,000 records",
            lambda t: _check(lambda d: d.update(records=d["records"] * 10_000)),
            ERROR,
        )
    )
    add(
        (
            "check_results label zero-width",
            lambda t: _check(lambda d: d["records"][0].update(label="a\u200bb")),
            ERROR,
        )
    )
    add(
        (
            "check_results cpu bidi",
            lambda t: _check(lambda d: d["machine"].update(cpu="Intel\u202eDMA")),
            ERROR,
        )
    )
    add(("check_results good", lambda t: _check(lambda d: None), bool))
    add(
        (
            "check_file repeated key",
            partial(
                _check_file,
                text=lambda d: json.dumps(d).replace(
                    '"source": "survey"', '"source": "survey", "source": "book"'
                ),
            ),
            ERROR,
        )
    )
    add(("check_file a link", partial(_check_file, text=json.dumps, link=True), ERROR))
    add(("check_file good", partial(_check_file, text=json.dumps), bool))
    add(("write_json 3 writers at once", partial(_concurrent, json_file.write_json), (0).__eq__))
    add(("ddp write_json 3 writers at once", partial(_concurrent, ddp.write_json), (0).__eq__))
    err = "RuntimeError:\tbad\u202e"
    add(
        (
            "compat entry error with a tab",
            lambda t: compat_outcome.entry(None, 1.0, err, "2026-01-01", "abc")["error"],
            "RuntimeError: bad".__eq__,
        )
    )
    # ---- the runner's checks before any chapter runs
    for kind in (
        "results is a file",
        "previous file not JSON",
        "two notebooks, one stem",
        "a stem with a space",
    ):
        add((f"run_notebooks {kind}", partial(_before, kind=kind), ERROR))
    add(("run_notebooks fine", partial(_before, kind="fine"), lambda got: got is None))
    # ---- python -m tricks_helpers.ddp: bounded waits, early checks
    missing_rank = {"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29517"}
    add(
        (
            "ddp a missing rank, --timeout 2",
            lambda t: _ddp(t, "shard", "--variant", "ddp", "--timeout", "2", env=missing_rank),
            ERROR,
        )
    )
    add(
        (
            "ddp --backend nccl on a CPU host",
            lambda t: _ddp(t, "train", "--variant", "x", "--backend", "nccl"),
            ERROR,
        )
    )
    for opt, value in (
        ("--seed", str(2**70)),
        ("--seed", "-1"),
        ("--workers", "0"),
        ("--epochs", "0"),
    ):
        add(
            (
                f"ddp seeding {opt} {value[:6]}",
                lambda t, o=opt, v=value: _ddp(
                    t, "seeding", "--seeding", "alike", "--mp-context", "fork", o, v
                ),
                ERROR,
            )
        )
    add(
        (
            "ddp shard --timeout nan",
            lambda t: _ddp(t, "shard", "--variant", "ddp", "--timeout", "nan"),
            ERROR,
        )
    )
    # ---- a store deleted while read
    for fmt in ("folder", "lmdb", "tar"):
        add(
            (
                f"deleted {fmt} store",
                partial(_deleted_store, fmt=fmt),
                lambda msg: "was deleted while reading" in msg,
            )
        )
    return c


#: ``probe(timeout=120.0, only=None)``: the rows; ``main(argv)``: the command (harness).
probe, main = probe_command(_cases, classify, timeout=120.0, width=48)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
