"""Tests of tricks_helpers.ddp.ranks: the one rank entry point, checked before anything starts."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys

import pytest
import torch

from tricks_helpers import ddp, determinism
from tricks_helpers.ddp import ranks

MP = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"

JOB_ARGS = {
    "train": ["--variant", "x"],
    "shard": ["--variant", "ddp"],
    "seeding": ["--seeding", "alike", "--mp-context", MP],
}


def test_every_job_has_its_options():
    assert set(ddp.JOBS) == set(JOB_ARGS)


@pytest.mark.parametrize("job", sorted(JOB_ARGS))
def test_every_job_refuses_to_run_outside_torchrun(job, monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(SystemExit) as info:
        ddp.main([job, "--out", str(tmp_path), *JOB_ARGS[job]])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "run me under torchrun (RANK is not set)" in err
    assert f"-m tricks_helpers.ddp {job} --out DIR" in err


@pytest.mark.parametrize("job", sorted(JOB_ARGS))
def test_every_job_needs_an_existing_out_dir(job, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(SystemExit):
        ddp.main([job, "--out", str(tmp_path / "missing"), *JOB_ARGS[job]])
    assert "--out: no such directory" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, said",
    [
        ([], "required: JOB"),
        (["fit", "--out", "."], "invalid choice: 'fit'"),
        (["shard", "--out", ".", "--variant", "zero3"], "invalid choice: 'zero3'"),
        (["seeding", "--out", ".", "--seeding", "alike"], "--mp-context"),
        (["train", "--variant", "x"], "--out"),
        (["train", "--out", ".", "--variant", "a", "--variant", "a"], "names must be unique"),
    ],
)
def test_bad_command_lines_fail_with_a_usage_message(argv, said, monkeypatch, capsys):
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(SystemExit):
        ddp.main(argv)
    assert said in capsys.readouterr().err


def test_a_bad_variant_raises_before_the_process_group_starts(monkeypatch, tmp_path):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setattr(ranks.dist, "init_process_group", lambda backend: pytest.fail("started"))
    with pytest.raises(ValueError, match="bad item 'speed=3'"):
        ddp.main(["train", "--out", str(tmp_path), "--variant", "x:speed=3"])


def test_python_dash_m_runs_the_entry_point(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "tricks_helpers.ddp", "shard", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "RANK"},
    )
    assert done.returncode == 2 and "usage: python -m tricks_helpers.ddp" in done.stderr
    assert "--variant" in done.stderr  # shard's required option, named in the usage message


def test_nccl_branch_turns_on_determinism_first(monkeypatch, tmp_path):
    """Issue 20, defect 5: bitwise run-to-run equality on NCCL needs deterministic kernels."""
    seen = []

    class Stop(Exception):
        pass

    def set_device(index):
        seen.append(("set_device", torch.are_deterministic_algorithms_enabled()))

    def init_process_group(backend, **kwargs):
        seen.append((backend, torch.are_deterministic_algorithms_enabled()))
        raise Stop

    monkeypatch.setenv("RANK", "0")
    monkeypatch.setattr(ranks, "_choose_backend", lambda requested: "nccl")
    monkeypatch.setattr(torch.cuda, "set_device", set_device)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(ranks.dist, "init_process_group", init_process_group)
    before = determinism.current_settings()
    try:
        with pytest.raises(Stop):
            ddp.main(["train", "--out", str(tmp_path), "--variant", "x"])
        assert seen == [("set_device", True), ("nccl", True)]
        assert torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        determinism.restore_settings(before)


@pytest.mark.parametrize("job", ["shard", "seeding"])
def test_shard_and_seeding_run_on_gloo(job, monkeypatch, tmp_path):
    backends = []

    class Stop(Exception):
        pass

    def init_process_group(backend, **kwargs):
        backends.append(backend)
        raise Stop

    monkeypatch.setenv("RANK", "0")
    monkeypatch.setattr(ranks.dist, "init_process_group", init_process_group)
    with pytest.raises(Stop):
        ddp.main([job, "--out", str(tmp_path), *JOB_ARGS[job]])
    assert backends == ["gloo"]


def test_choose_backend(monkeypatch):
    assert ranks._choose_backend("gloo") == "gloo"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert ranks._choose_backend("auto") == "gloo"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(ranks.dist, "is_nccl_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert ranks._choose_backend("auto") == "gloo"  # fewer GPUs than local ranks
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    assert ranks._choose_backend("auto") == "nccl"


# ------------------------------------------------------------ issue 42: bounded waits, early checks


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_missing_rank_ends_the_rendezvous_after_the_timeout_with_a_clear_error(tmp_path):
    """Issue 42: one rank of two, alone, waited for torch's 30-minute default."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    env.update(
        RANK="0",
        WORLD_SIZE="2",
        LOCAL_RANK="0",
        LOCAL_WORLD_SIZE="2",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(_free_port()),
    )
    argv = ["shard", "--out", str(tmp_path), "--variant", "ddp", "--timeout", "2"]
    done = subprocess.run(
        [sys.executable, "-m", "tricks_helpers.ddp", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode != 0
    assert "rank 0 of 2: the process group (gloo) did not form within 2 s" in done.stderr
    assert "is every rank running" in done.stderr


def test_nccl_on_a_host_without_cuda_is_a_usage_error(monkeypatch, tmp_path, capsys):
    """Issue 42: ``--backend nccl`` on a CPU host ended in an AttributeError."""
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(ranks.dist, "init_process_group", lambda *a, **k: pytest.fail("started"))
    with pytest.raises(SystemExit) as info:
        ddp.main(["train", "--out", str(tmp_path), "--variant", "x", "--backend", "nccl"])
    assert info.value.code == 2
    assert "--backend nccl needs a CUDA device per local rank" in capsys.readouterr().err


@pytest.mark.parametrize(
    "job, extra, said",
    [
        ("seeding", ["--seed", str(2**70)], "--seed must be in [0, 9223372036854775807]"),
        ("seeding", ["--seed", "-1"], "--seed must be in"),
        ("seeding", ["--workers", "0"], "--workers must be in"),
        ("seeding", ["--epochs", "0"], "--epochs must be in"),
        ("shard", ["--rounds", "0"], "--rounds must be in"),
        ("shard", ["--steps", "-3"], "--steps must be in"),
        ("shard", ["--timeout", "nan"], "--timeout must be seconds"),
        ("train", ["--timeout", "0"], "--timeout must be seconds"),
    ],
)
def test_every_option_is_checked_before_the_process_group_starts(
    job, extra, said, monkeypatch, tmp_path, capsys
):
    """Issue 42: a seed too large failed only after the process group had started."""
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setattr(ranks.dist, "init_process_group", lambda *a, **k: pytest.fail("started"))
    with pytest.raises(SystemExit) as info:
        ddp.main([job, "--out", str(tmp_path), *JOB_ARGS[job], *extra])
    assert info.value.code == 2
    assert said in capsys.readouterr().err
