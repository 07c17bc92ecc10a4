"""Writer faults that need a separate process (tests of tricks_helpers.storage.writing).

- A writer SIGKILLed at random moments (and at every stage of :func:`storage.write`) leaves
  the final path holding nothing, the old store, or the complete verified new store; the next
  write (or :func:`storage.recover`) removes what it left behind.
- A flipped bit anywhere in a small store (value bytes, the format's own structure, the
  manifest) makes :func:`storage.verify` raise CorruptRecordError, and never crashes the
  process (each verify runs in a child process that would die instead).
- A full disk (``RLIMIT_FSIZE``) makes every writer raise an error, not crash, and leave
  nothing behind (h5py used to segfault here).

The child processes import only ``tricks_helpers.storage`` (no torch), so they start fast.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

from tricks_helpers import storage

FORMATS = storage.FORMATS

_COMMON = r"""
import json, os, random, resource, signal, sys, time
from pathlib import Path
from tricks_helpers import storage
from tricks_helpers.storage import writing
assert "torch" not in sys.modules

def recs(tag, n):
    return [(f"{tag}/{i:04d}", (f"{tag}{i}-".encode() * 400)[: 50 + 61 * i]) for i in range(n)]

def opts(fmt):
    return {"shard_records": 8} if fmt == "tar" else {}
"""

_KILL_CHILD = (
    _COMMON
    + r"""
root, trials, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
OLD, NEW = recs("old", 30), recs("new", 45)
# (stage, fallback protocol, old store present): every stage where a kill is possible
STAGES = ([(s, False, True) for s in ("started", "payload-written", "manifest-written",
                                      "verified", "swapped", "old-removed")]
          + [(s, True, True) for s in ("old-moved-away", "installed")]
          + [(s, False, False) for s in ("payload-written", "verified", "installed")])

def run(fmt, target, stage=None, delay=None, fallback=False):
    pid = os.fork()
    if pid == 0:  # the writer
        try:
            if fallback:
                writing._libc_renameat2 = lambda: None
            if stage:
                writing._stage_hook = (
                    lambda name: os.kill(os.getpid(), signal.SIGKILL) if name == stage else None)
            storage.write(target, NEW, fmt, overwrite=True, **opts(fmt))
        finally:
            os._exit(0)
    if delay is not None:
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)

def state(target):
    if not target.exists():
        return "nothing"
    got = list(storage.read_all(target))  # every check of verify(): a half store raises
    return "old" if got == OLD else "new" if got == NEW else "other"

for fmt in sys.argv[4:]:
    start = time.perf_counter()
    run(fmt, root / f"{fmt}-timing")
    full = time.perf_counter() - start
    rng = random.Random(seed)
    cases = ([("stage", *s) for s in STAGES]
             + [("random", rng.uniform(0, 1.3 * full), False, i % 2 == 0) for i in range(trials)])
    for i, (kind, arg, fallback, had_old) in enumerate(cases):
        target = root / f"{fmt}-{i}"
        if had_old:
            storage.write(target, OLD, fmt, **opts(fmt))
        run(fmt, target, stage=arg if kind == "stage" else None,
            delay=arg if kind == "random" else None, fallback=fallback)
        before = state(target)
        left = sorted(p.name for p in root.iterdir() if p.name.startswith(f".{target.name}."))
        after = state(target) if storage.recover(target) else before
        left_after = [p.name for p in root.iterdir() if p.name.startswith(f".{target.name}.")]
        print(json.dumps({"fmt": fmt, "kind": kind, "arg": arg, "fallback": fallback,
                          "had_old": had_old, "before": before, "after": after,
                          "left": len(left), "left_after": left_after}), flush=True)
"""
)

_FLIP_CHILD = (
    _COMMON
    + r'''
root, seed, per_class = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
values = recs("v", 8)

def positions(store, fmt):
    """(class, file, offset) of every byte of the store: data / index / manifest."""
    m = json.loads((store / storage.MANIFEST).read_text())
    out = []
    files = [r[0] for r in m["records"]] if fmt == "folder" else list(m["files"])
    for rel in files:
        data = (store / rel).read_bytes()
        inside = set()
        for _, v in values:
            at = data.find(v)
            while at >= 0:
                inside.update(range(at, at + len(v)))
                at = data.find(v, at + 1)
        # structure bytes: every non-zero byte, and some of the zero padding
        out += [("data" if i in inside else "index", rel, i) for i in range(len(data))
                if i in inside or data[i] or i % 64 == 0]
    text = (store / storage.MANIFEST).read_bytes()
    lo, hi = text.find(b'"records"'), text.find(b'"version"')
    for i in range(len(text)):
        cls = "index" if fmt == "folder" and lo <= i < hi else "manifest"
        out.append((cls, storage.MANIFEST, i))
    return out

for fmt in sys.argv[4:]:
    store = root / fmt
    storage.write(store, values, fmt, **opts(fmt))
    chosen = []
    by_class = {}
    for p in positions(store, fmt):
        by_class.setdefault(p[0], []).append(p)
    for cls, ps in sorted(by_class.items()):
        chosen += ps if len(ps) <= per_class else [ps[0], ps[-1]] + rng.sample(ps, per_class - 2)
    for cls, rel, i in chosen:
        path = store / rel
        clean = path.read_bytes()
        bit = 1 << rng.randrange(8)
        print(json.dumps({"fmt": fmt, "class": cls, "file": rel, "pos": i, "bit": bit,
                          "started": True}), flush=True)
        data = bytearray(clean)
        data[i] ^= bit
        path.write_bytes(bytes(data))
        try:
            storage.verify(store)
            outcome = "accepted"
        except Exception as exc:
            outcome = type(exc).__name__
        path.write_bytes(clean)
        print(json.dumps({"fmt": fmt, "class": cls, "file": rel, "pos": i, "bit": bit,
                          "outcome": outcome}), flush=True)
'''
)

_FULL_DISK_CHILD = (
    _COMMON
    + r"""
root = Path(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))  # Python ignores SIGXFSZ
big = [(f"b/{i:03d}", os.urandom(20_000)) for i in range(40)] + [("b/huge", os.urandom(99_000))]
for fmt in sys.argv[2:]:
    try:
        storage.write(root / fmt, big, fmt, **opts(fmt))
        outcome = "written"
    except Exception as exc:
        outcome = type(exc).__name__
    import gc
    gc.collect()
    print(json.dumps({"fmt": fmt, "outcome": outcome, "left": sorted(os.listdir(root))}),
          flush=True)
"""
)


def _child(script: str, *args: object, timeout: float = 240) -> tuple[int, list[dict], str]:
    proc = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, lines, proc.stderr


def test_a_killed_writer_leaves_nothing_the_old_store_or_the_new_one(tmp_path):
    trials = 25
    rc, rows, err = _child(_KILL_CHILD, tmp_path, trials, 20260101, *FORMATS)
    assert rc == 0, err[-2000:]
    for fmt in FORMATS:
        mine = [r for r in rows if r["fmt"] == fmt]
        assert sum(r["kind"] == "random" for r in mine) >= 25, fmt
        for r in mine:
            allowed = {"old", "new"} if r["had_old"] else {"nothing", "new"}
            if r["fallback"] and r["had_old"]:
                allowed.add("nothing")  # between the two renames; recover() puts it back
            assert r["before"] in allowed, r
            assert r["after"] in ({"old", "new"} if r["had_old"] else {"nothing", "new"}), r
            assert r["left_after"] == [], r  # recover() removed every temporary
        # the stages really were hit: a kill before the swap keeps the old store, after it
        # the new one is in place
        stage = {
            (r["arg"], r["fallback"], r["had_old"]): r["before"]
            for r in mine
            if r["kind"] == "stage"
        }
        assert stage[("started", False, True)] == "old"
        assert stage[("verified", False, True)] == "old"
        assert stage[("swapped", False, True)] == "new"
        assert stage[("old-moved-away", True, True)] == "nothing"
        print(fmt, Counter((r["kind"], r["before"]) for r in mine))


def test_every_flipped_bit_is_caught_and_never_crashes_the_verifier(tmp_path):
    rc, rows, err = _child(_FLIP_CHILD, tmp_path, 9, 30, *FORMATS)
    done = [r for r in rows if "outcome" in r]
    started = [r for r in rows if r.get("started")]
    assert rc == 0, f"the verifier died ({rc}) on {started[-1] if started else None}: {err[-1500:]}"
    assert len(done) == len(started)
    for fmt in FORMATS:
        classes = Counter(r["class"] for r in done if r["fmt"] == fmt)
        assert set(classes) == {"data", "index", "manifest"}, (fmt, classes)
    outcomes = Counter(r["outcome"] for r in done)
    assert set(outcomes) <= {"CorruptRecordError", "TruncatedStoreError"}, [
        r for r in done if r["outcome"] not in ("CorruptRecordError", "TruncatedStoreError")
    ][:5]


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE semantics checked on Linux")
def test_a_full_disk_raises_and_leaves_nothing(tmp_path):
    rc, rows, err = _child(_FULL_DISK_CHILD, tmp_path, *FORMATS, timeout=120)
    assert rc == 0, f"the writer crashed ({rc}): {err[-1500:]}"
    assert [r["fmt"] for r in rows] == list(FORMATS)
    for r in rows:
        assert r["outcome"] in ("OSError", "FileTooLargeError"), r  # as write() promises
        assert r["left"] == [], r


def test_children_do_not_import_torch():
    rc, _, err = _child(_COMMON + "print(sorted(m for m in sys.modules if 'torch' in m))")
    assert rc == 0, err
