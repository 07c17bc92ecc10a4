"""``make gpu-run``: the book on a GPU host that brings its own CUDA torch and has no network.

    python3 -m scripts.compat.gpu_run --wheelhouse .wheelhouse [--out _build/gpu-run]
        [--results results] [--jobs N] [NOTEBOOK ...]

Run with the host's own Python (the one that holds its CUDA torch); torch is never installed or
changed. In order:

1. **CUDA or stop**: unless ``torch.cuda.is_available()``, it stops at once (exit 2) and says
   why: on a CPU machine nothing is installed and nothing runs.
2. **Offline install**: every wheel of the wheelhouse (``make wheelhouse``, built where the
   index is reachable) goes into ``<out>/site`` with ``pip install --no-index --no-deps
   --target``, put first on ``PYTHONPATH`` for what follows (the host's environment is left as
   it is); then every requirement of what was installed must be met here (exit 3 naming what
   is missing, e.g. numpy, which a torch image usually has).
3. **In parallel** (``--jobs``, default: one job per chapter plus one, at most the cores; each
   job gets ``cores // jobs`` threads): nbval over every chapter with the book's sanitize file
   plus the lines naming the torch release masked (``scripts/compat/release_lines.py``),
   everything else compared; the unit tests that take a CUDA branch (:data:`CUDA_TESTS`).
   Each chapter's kernel also appends its comparisons and claims (the runner's record
   variables), so the one execution serves nbval and the machine's survey record.
4. **One folder** ``<out>``: ``logs/`` (one log per job), ``summary.txt`` (one screen: the
   host, the install, each chapter's nbval line, the unit tests, the record), ``logs.tar.gz``
   (all of it, for a tool that brings back few files), and the survey record, written to
   ``<results>/<machine-id>-survey.json`` (``machine_records``) and copied into ``<out>``.

``--cpu-rehearsal`` runs every step on a CPU all the same, to rehearse the run where there is
no GPU (the record is then a CPU survey).

Exit status: 0 when every job passed, 1 when one failed, 2 without CUDA, 3 when the install
failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from scripts.compat.wheelhouse import WITHOUT_DEPS, normalize

ROOT = Path(__file__).resolve().parents[2]
# the unit tests with a CUDA branch (each skips it without CUDA; here they run it)
CUDA_TESTS = (
    "tests/test_gpu_checks.py",
    "tests/test_prefetch.py",
    "tests/test_env.py",
    "tests/test_determinism.py",
    "tests/memory/test_peaks.py",
    "tests/bench/test_timing.py",
)
NO_CUDA = (
    "gpu_run: torch.cuda.is_available() is False ({why}): this is not a GPU host, so nothing "
    "was installed or run. Run `make gpu-run` where torch sees a CUDA device."
)


def cuda_or_why() -> str:
    """``""`` when this Python's torch sees a CUDA device, else why not (one line)."""
    try:
        import torch
    except ImportError as exc:
        return f"no torch in this Python ({sys.executable}): {exc}"
    if not torch.cuda.is_available():
        build = f"torch {torch.__version__}, CUDA build {torch.version.cuda or 'none'}"
        return f"{build}, {torch.cuda.device_count()} devices"
    return ""


def install(wheelhouse: Path, site: Path) -> tuple[int, float]:
    """Install every wheel of ``wheelhouse`` into ``site`` offline; returns (wheels, seconds).

    Raises:
        FileNotFoundError: no wheel in ``wheelhouse``.
        subprocess.CalledProcessError: pip failed.
    """
    wheels = sorted(Path(wheelhouse).glob("*.whl"))
    if not wheels:
        raise FileNotFoundError(f"no wheels in {wheelhouse}: run `make wheelhouse` first")
    start = time.monotonic()
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps"]
    # compiled at install: a first import compiling it would print SyntaxWarnings (torchao under
    # Python 3.12) into the cell that imports it, which nbval compares
    cmd += ["--no-cache-dir", "--upgrade", "--target", str(site)]
    subprocess.run(cmd + [str(w) for w in wheels], check=True)
    return len(wheels), time.monotonic() - start


def unmet(site: Path) -> list[str]:
    """Requirements of the distributions in ``site`` that nothing on ``site`` + ``sys.path``
    meets: ``"numpy (simplejpeg needs numpy>=1.19)"``; empty when all are met. A distribution
    the wheelhouse brings without its dependencies (``WITHOUT_DEPS``) is not checked."""
    import importlib.metadata as md

    from packaging.markers import default_environment
    from packaging.requirements import InvalidRequirement, Requirement

    path = [str(site)] + sys.path
    have = {}
    for dist in md.distributions(path=path):
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        have.setdefault(name, dist.version)
    env = default_environment()
    missing = []
    for dist in md.distributions(path=[str(site)]):
        if normalize(dist.metadata["Name"] or "") in WITHOUT_DEPS:
            continue  # brought without its closure on purpose (make wheelhouse)
        for line in dist.requires or []:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if req.marker is not None and not req.marker.evaluate({**env, "extra": ""}):
                continue
            name = req.name.lower().replace("_", "-")
            version = have.get(name)
            if version is None or (req.specifier and not req.specifier.contains(version, True)):
                found = "missing" if version is None else f"{version} here"
                missing.append(f"{req.name} ({dist.metadata['Name']} needs {req}; {found})")
    return sorted(set(missing))


@dataclass
class Job:
    name: str
    cmd: list[str]
    log: Path
    env: dict
    proc: subprocess.Popen | None = None
    start: float = 0.0
    seconds: float = 0.0
    code: int | None = None

    def last_line(self) -> str:
        lines = [ln for ln in self.log.read_text(errors="replace").splitlines() if ln.strip()]
        return lines[-1].strip() if lines else "(no output)"


def run_jobs(jobs: list[Job], parallel: int) -> None:
    """Run ``jobs``, at most ``parallel`` at a time, each writing its log."""
    waiting, running = list(jobs), []
    while waiting or running:
        while waiting and len(running) < parallel:
            job = waiting.pop(0)
            job.log.parent.mkdir(parents=True, exist_ok=True)
            job.start = time.monotonic()
            with job.log.open("w") as log:
                job.proc = subprocess.Popen(
                    job.cmd, cwd=ROOT, env=job.env, stdout=log, stderr=subprocess.STDOUT
                )
            running.append(job)
        time.sleep(1)
        for job in list(running):
            if job.proc.poll() is not None:
                job.code, job.seconds = job.proc.returncode, time.monotonic() - job.start
                running.remove(job)
                print(f"  {job.name}: exit {job.code} in {job.seconds:.0f} s", flush=True)


def chapter_jobs(notebooks, out: Path, sanitize: Path, env: dict) -> list[Job]:
    from scripts.book.chapter_run import records_env

    jobs = []
    for nb in notebooks:
        stem = Path(nb).stem
        cmd = [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env"]
        cmd += ["--nbval-sanitize-with", str(sanitize), "--nbval-cell-timeout=600"]
        cmd += ["-q", "-p", "no:cacheprovider", str(nb)]
        records = out / "records" / f"{stem}.jsonl"
        records.parent.mkdir(parents=True, exist_ok=True)
        records.unlink(missing_ok=True)
        jobs.append(
            Job(stem, cmd, out / "logs" / f"nbval-{stem}.log", records_env(records, stem, env))
        )
    return jobs


def survey_record(jobs: list[Job], out: Path, results: Path, limits) -> Path:
    """Write the chapters' records and claims as this machine's survey record."""
    from scripts.book.chapter_run import (
        Outcome,
        claims_file,
        read_chapter_claims,
        read_chapter_records,
    )
    from scripts.book.machine_records import machine_facts
    from scripts.book.run_notebooks import previous_results, write_records

    outcomes = []
    for job in jobs:
        records_file = out / "records" / f"{job.name}.jsonl"
        records, problem = read_chapter_records(records_file, job.name)
        claims, claim_problem = read_chapter_claims(claims_file(records_file), job.name)
        nbval = "" if job.code == 0 else f"nbval: {job.last_line()}"
        error = "; ".join(e for e in (nbval, problem, claim_problem) if e)
        outcomes.append(Outcome(f"{job.name}.ipynb", job.seconds, error, records, claims))
    machine = machine_facts()
    old = previous_results(results, machine, "survey")
    return write_records(outcomes, results, "survey", limits, machine, old=old)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="chapters (default: every chapter)")
    parser.add_argument("--wheelhouse", default=".wheelhouse", help="make wheelhouse's folder")
    parser.add_argument("--out", default="_build/gpu-run", help="the output folder")
    parser.add_argument("--results", default=str(ROOT / "results"), help="results folder")
    parser.add_argument("--jobs", type=int, default=0, help="jobs at a time (0: automatic)")
    parser.add_argument("--no-unit", action="store_true", help="skip the CUDA unit tests")
    parser.add_argument(
        "--cpu-rehearsal",
        action="store_true",
        help="run every step on a CPU all the same (to rehearse the run; its record is a CPU "
        "survey, and the CUDA branches are not taken)",
    )
    args = parser.parse_args(argv)
    start = time.monotonic()
    why = cuda_or_why()
    if why and not args.cpu_rehearsal:
        print(NO_CUDA.format(why=why), file=sys.stderr)
        return 2
    import torch

    out = Path(args.out).resolve()
    if out.exists():
        shutil.rmtree(out)
    site = out / "site"
    try:
        count, seconds = install(Path(args.wheelhouse), site)
    except (FileNotFoundError, subprocess.CalledProcessError) as exc:
        print(f"gpu_run: the offline install failed: {exc}", file=sys.stderr)
        return 3
    sys.path.insert(0, str(site))
    missing = unmet(site)
    if missing:
        print("gpu_run: the wheelhouse and this host together lack:", *missing, sep="\n  ")
        return 3
    size = sum(p.stat().st_size for p in Path(args.wheelhouse).glob("*.whl"))
    print(f"installed {count} wheels ({size / 1e6:.1f} MB) offline in {seconds:.1f} s", flush=True)

    from scripts.book.find_notebooks import notebooks_from_args
    from scripts.compat import release_lines

    notebooks = notebooks_from_args(args.notebooks, ROOT)
    sanitize = release_lines.write(out / "sanitize.cfg")
    cores = os.cpu_count() or 1
    n_jobs = len(notebooks) + (0 if args.no_unit else 1)
    parallel = args.jobs or max(1, min(n_jobs, cores))
    threads = str(max(1, cores // parallel))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "MPLCONFIGDIR": str(out / "mplconfig"),
        "OMP_NUM_THREADS": threads,
        "PYTHONUNBUFFERED": "1",
    }
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env=env, check=False)
    from scripts.book.machine_records import limits_record
    from tricks_helpers.limits import measure_limits

    limits = limits_record(measure_limits())
    jobs = chapter_jobs(notebooks, out, sanitize, env)
    unit = None
    if not args.no_unit:
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *CUDA_TESTS]
        unit = Job("unit-cuda", cmd, out / "logs" / "unit-cuda.log", env)
    print(f"running {n_jobs} jobs, {parallel} at a time, {threads} threads each", flush=True)
    run_jobs(([unit] if unit else []) + jobs, parallel)
    record = survey_record(jobs, out, Path(args.results), limits)
    shutil.copy2(record, out / record.name)
    gpu = torch.cuda.get_device_properties(0).name if not why else f"no GPU ({why}): rehearsal"
    lines = [
        f"gpu-run: {gpu}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
        f"Python {sys.version.split()[0]}, {cores} cores",
        f"install: {count} wheels, {size / 1e6:.1f} MB, offline in {seconds:.1f} s",
        f"jobs: {n_jobs}, {parallel} at a time, {threads} threads each; wall "
        f"{time.monotonic() - start:.0f} s",
    ]
    width = max(len(j.name) for j in jobs)
    for job in ([unit] if unit else []) + jobs:
        status = "passed" if job.code == 0 else "FAILED"
        lines.append(f"  {job.name:<{width}}  {status}  {job.seconds:5.0f} s  {job.last_line()}")
    failed = [j.name for j in jobs + ([unit] if unit else []) if j.code != 0]
    lines.append(f"record: {record}")
    lines.append("all passed" if not failed else f"failed: {', '.join(failed)}")
    summary = "\n".join(lines) + "\n"
    (out / "summary.txt").write_text(summary, encoding="utf-8")
    with tarfile.open(out / "logs.tar.gz", "w:gz") as tar:
        for name in ("logs", "records", "summary.txt", "sanitize.cfg", record.name):
            tar.add(out / name, arcname=name)
    print(summary, end="")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
