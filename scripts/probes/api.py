"""Probe every public callable of ``tricks_helpers`` with odd inputs, and classify what happens.

For each name in each module's ``__all__`` (faces included, so every public name is reached),
the callable is first called with plausible arguments chosen by parameter name (the
baseline). Where the baseline works, each parameter in turn is replaced by each input kind:
NaN (a float and a tensor), a tensor subclass, a sparse and a meta tensor, out-of-range
integers, wrong types, a function returning NaN; callables that take a function are also run
under a frozen clock. Each case is classified:

- ``clear error``: TypeError / ValueError / RuntimeError / KeyError / AssertionError /
  OSError / NotImplementedError whose message names the function or the parameter;
- ``obscure``: any other exception, or one whose message names neither;
- ``returned``: a value came back for an input that may well be fine (sparse, meta, subclass);
- ``suspect``: a value came back for a wrong type, an out-of-range number, a frozen clock, or
  a finite number for NaN input: read these (``--show suspect``) and decide correct or
  silent wrong;
- ``crash``: the process died (a signal); ``hang``: a case ran over ``--timeout`` seconds.

Every module runs in a child process; a crash or hang is recorded and the child restarted
after the case. Usage::

    python -m scripts.probes.api                   # counts per class and per module
    python -m scripts.probes.api --show suspect    # the cases of one class, one per line
    python -m scripts.probes.api --module tricks_helpers.bench
"""

from __future__ import annotations

import argparse
import collections
import importlib
import inspect
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Public modules not probed, with why: they run machine-wide measurements.
NOT_PROBED = {
    "tricks_helpers.limits": "measures the machine for seconds per call",
}

#: The repository root: each probed module runs in a child, ``python -m`` from here.
ROOT = Path(__file__).resolve().parents[2]


def public_modules() -> tuple[str, ...]:
    """Every public module and subpackage of ``tricks_helpers`` (no ``_private`` ones), sorted."""
    import pkgutil

    import tricks_helpers

    names = (
        f"tricks_helpers.{info.name}"
        for info in pkgutil.iter_modules(tricks_helpers.__path__)
        if not info.name.startswith("_")
    )
    return tuple(sorted(names))


#: What a plain run probes: every public module but :data:`NOT_PROBED`.
MODULES = tuple(m for m in public_modules() if m not in NOT_PROBED)
#: Not called: they start processes, run a whole training, compile, or never return.
SKIP = {
    "run_torchrun",
    "main",
    "train",
    "train_reference",
    "train_data_parallel",
    "compiled_code",
    "find_duplicate_samples",
    "seed_worker",
    "run_rank",
    "run_variants",
    "resume_in_fresh_process",
    "time_cold_start",
    "graph_breaks",
}
CLEAR = (
    TypeError,
    ValueError,
    RuntimeError,
    KeyError,
    AssertionError,
    OSError,
    NotImplementedError,
)
FN_NAMES = {"fn", "baseline", "trick", "check", "visit", "step", "loss_fn"}
MODEL_NAMES = {"model", "net", "module", "obj", "dataset"}


def _default(name: str, tmp: str):
    import torch

    if name in FN_NAMES:
        return lambda *a, **k: torch.ones(4, 4) @ torch.ones(4, 4)
    if name in MODEL_NAMES:
        return torch.nn.Linear(4, 4)
    if name in {"label", "name", "tag", "title", "root", "what", "kind", "fmt", "key"}:
        return "probe"
    if name in {"X", "x", "inputs", "input", "batch", "images"}:
        return torch.ones(8, 4)
    if name in {"y", "labels", "targets"}:
        return torch.zeros(8, dtype=torch.long)
    if name in {"values", "times", "baseline_times", "trick_times", "ratios"}:
        return [1.0, 2.0, 3.0]
    if name in {"tensors", "ignore"}:
        return [torch.ones(4)]
    if name in {"a", "b", "expected", "actual", "t", "tensor", "weight"}:
        return torch.ones(4)
    if name in {"path", "directory", "folder", "out", "trace", "trace_path"}:
        return tmp
    if name in {"seconds", "value", "lo", "hi", "confidence", "threshold", "ratio"}:
        return {"lo": 1.0, "hi": 2.0, "confidence": 0.95, "threshold": 1.1}.get(name, 1.0)
    return 1


def _kinds():
    import torch

    class Sub(torch.Tensor):
        pass

    nan = float("nan")
    return {
        "NaN float": lambda: nan,
        "NaN tensor": lambda: torch.full((8, 4), nan),
        "tensor subclass": lambda: torch.ones(8, 4).as_subclass(Sub),
        "sparse tensor": lambda: torch.ones(8, 4).to_sparse(),
        "meta tensor": lambda: torch.ones(8, 4, device="meta"),
        "negative int": lambda: -1,
        "huge int": lambda: 2**70,
        "wrong type: object": lambda: object(),
        "wrong type: str": lambda: "x",
        "fn returning NaN": lambda: lambda *a, **k: torch.full((4,), nan),
    }


SUSPECT_KINDS = {"negative int", "huge int", "wrong type: object", "wrong type: str"}


def _has_finite_number(value, depth: int = 0) -> bool:
    import torch

    if depth > 3:
        return False
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return math.isfinite(value)
    if isinstance(value, torch.Tensor) and value.device.type != "meta" and not value.is_sparse:
        try:
            return bool(value.numel()) and bool(torch.isfinite(value.float()).all())
        except Exception:
            return False
    if isinstance(value, (list, tuple)):
        return any(_has_finite_number(v, depth + 1) for v in value)
    return False


def _classify(where: str, param: str, kind: str, call) -> tuple[str, str]:
    try:
        value = call()
    except CLEAR as err:
        text = str(err)
        named = where in text or param in text
        return ("clear error" if named else "obscure"), f"{type(err).__name__}: {text[:150]}"
    except Exception as err:
        return "obscure", f"{type(err).__name__}: {str(err)[:150]}"
    if kind in SUSPECT_KINDS or kind == "frozen clock":
        return "suspect", f"returned {repr(value)[:120]}"
    if kind.startswith(("NaN", "fn returning NaN")) and _has_finite_number(value):
        return "suspect", f"finite result from NaN: {repr(value)[:120]}"
    return "returned", repr(value)[:120]


def _is_record(obj) -> bool:
    """Exceptions, dataclasses and named tuples: plain records that hold what they are given."""
    import dataclasses

    return isinstance(obj, type) and (
        issubclass(obj, BaseException) or dataclasses.is_dataclass(obj) or hasattr(obj, "_fields")
    )


def _cases(module_name: str):
    """(case id, callable name, parameter, kind, thunk) for every case of one module."""
    import torch  # noqa: F401 - kinds build tensors

    module = importlib.import_module(module_name)
    tmp = tempfile.mkdtemp(prefix="probe-")
    kinds = _kinds()
    for public in getattr(module, "__all__", []):
        obj = getattr(module, public)
        if not callable(obj) or public in SKIP or _is_record(obj):
            continue
        try:
            params = [
                p
                for p in inspect.signature(obj).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                and p.default is p.empty
            ]
        except (TypeError, ValueError):
            continue
        defaults = {p.name: _default(p.name, tmp) for p in params}

        def make_call(obj=obj, params=params, defaults=defaults, override=None):
            def call():
                args, kwargs = [], {}
                for p in params:
                    v = override[1]() if override and override[0] == p.name else defaults[p.name]
                    (kwargs.__setitem__(p.name, v) if p.kind == p.KEYWORD_ONLY else args.append(v))
                return obj(*args, **kwargs)

            return call

        yield f"{public}()", public, "-", "baseline", make_call()
        for p in params:
            for kind, make in kinds.items():
                yield (
                    f"{public}({p.name}={kind})",
                    public,
                    p.name,
                    kind,
                    make_call(override=(p.name, make)),
                )
        if any(p.name in FN_NAMES for p in params):
            yield f"{public}(frozen clock)", public, "clock", "frozen clock", make_call()


def child(module_name: str, skip: int, timeout: float) -> None:
    """Run the cases of one module from index ``skip`` on, one JSON line each."""
    import contextlib
    import io
    import signal

    def alarm(*_):
        raise TimeoutError("probe: case timed out")

    signal.signal(signal.SIGALRM, alarm)
    baseline_ok: dict[str, bool] = {}
    for i, (case, public, param, kind, call) in enumerate(_cases(module_name)):
        if i < skip:
            continue
        if kind != "baseline" and not baseline_ok.get(public, False):
            continue
        print(json.dumps({"start": i, "case": case}), flush=True)
        patch = contextlib.nullcontext()
        if kind == "frozen clock":
            from unittest import mock

            patch = mock.patch("time.perf_counter", lambda: 42.0)
        signal.alarm(int(timeout))
        sink = io.StringIO()
        try:
            with patch, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                cls, detail = _classify(public, param, kind, call)
        except TimeoutError:
            cls, detail = "hang", f"over {timeout:.0f} s"
        finally:
            signal.alarm(0)
        if kind == "baseline":
            baseline_ok[public] = cls in ("returned", "suspect")
            cls = "baseline " + ("ok" if baseline_ok[public] else "failed")
        print(json.dumps({"done": i, "case": case, "class": cls, "detail": detail}), flush=True)


def probe(modules, timeout: float) -> list[dict]:
    results = []
    for module_name in modules:
        skip = 0
        while True:
            env = dict(os.environ, PYTHONWARNINGS="ignore")
            cmd = [sys.executable, "-m", __spec__.name, "--child", module_name, "--skip", str(skip)]
            cmd += ["--timeout", str(timeout)]
            try:
                proc = subprocess.run(
                    cmd, capture_output=True, text=True, env=env, timeout=timeout * 4 + 60, cwd=ROOT
                )
                out, code = proc.stdout, proc.returncode
            except subprocess.TimeoutExpired as err:
                out, code = (
                    (err.stdout or b"").decode()
                    if isinstance(err.stdout, bytes)
                    else (err.stdout or ""),
                    "timeout",
                )
            last = None
            for line in out.splitlines():
                if not line.startswith("{"):
                    continue
                rec = json.loads(line)
                if "done" in rec:
                    results.append({"module": module_name, **rec})
                    last = None
                else:
                    last = rec
            if code == 0 or last is None:
                if code != 0 and last is None:
                    results.append(
                        {
                            "module": module_name,
                            "case": "(import)",
                            "class": "crash",
                            "detail": (proc.stderr if code != "timeout" else "")[-300:],
                        }
                    )
                break
            cls = "hang" if code == "timeout" else "crash"
            results.append(
                {
                    "module": module_name,
                    "case": last["case"],
                    "class": cls,
                    "detail": f"exit {code}",
                }
            )
            skip = last["start"] + 1
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", help="probe only this module (repeatable)")
    parser.add_argument("--show", help="print the cases of this class")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per case")
    parser.add_argument("--json", help="write every case to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--skip", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.skip, args.timeout)
        return 0
    start = time.perf_counter()
    results = probe(args.module or MODULES, args.timeout)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    counts = collections.Counter(r["class"] for r in results if not r["class"].startswith("base"))
    per_module = collections.defaultdict(collections.Counter)
    for r in results:
        per_module[r["module"]][r["class"]] += 1
    for module_name, c in per_module.items():
        print(f"{module_name}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    print("total: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"({len(results)} cases in {time.perf_counter() - start:.0f} s)")
    if args.show:
        for r in results:
            if r["class"] == args.show:
                print(f"  {r['module']}.{r['case']}: {r['detail']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
