"""Tests of tricks_helpers.resume: bitwise resumption, the sampler's state, error paths."""

import os
import random
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch

from tricks_helpers import bitwise, resume
from tricks_helpers._checkpoint_file import MAGIC
from tricks_helpers.resume import checkpoint as resume_checkpoint


def _reference_and_checkpoint(tmp_path, steps, more):
    """An uninterrupted run of ``steps + more`` steps, and the checkpoint of another run of
    the same seed after ``steps``."""
    reference = resume.new_run(0)
    resume.train(reference, steps + more)
    first = resume.new_run(0)
    resume.train(first, steps)
    return reference, resume.save_checkpoint(first, tmp_path / "ck.pt")


def test_resume_in_process_is_bitwise_equal(tmp_path):
    reference, path = _reference_and_checkpoint(tmp_path, 3, 5)
    torch.manual_seed(99)  # disturb the global RNGs: the checkpoint must restore them
    np.random.seed(99)
    again = resume.load_checkpoint(path)
    resume.train(again, 5)
    assert again.losses == reference.losses[3:]
    bitwise.assert_bitwise_equal(again.model.state_dict(), reference.model.state_dict())


@pytest.mark.parametrize("omitted", ["torch_rng", "sampler", "optimizer"])
def test_an_omitted_component_changes_the_run(tmp_path, omitted):
    reference, path = _reference_and_checkpoint(tmp_path, 3, 5)
    torch.manual_seed(99)
    again = resume.load_checkpoint(path, omit=[omitted])
    resume.train(again, 5)
    assert again.losses != reference.losses[3:]


def test_resume_in_fresh_process(tmp_path):
    reference, path = _reference_and_checkpoint(tmp_path, 2, 2)
    out = resume.resume_in_fresh_process(path, 2, [(), ("numpy_rng",)])
    assert set(out) == {"complete", "without numpy_rng"}
    assert out["complete"]["losses"] == reference.losses[2:]
    assert out["without numpy_rng"]["losses"] != reference.losses[2:]


def test_sampler_resumes_mid_epoch():
    g = torch.Generator().manual_seed(0)
    sampler = resume.ResumableSampler(6, g)
    it = iter(sampler)
    head = [next(it), next(it)]
    state = sampler.state_dict()
    assert state["position"] == 2 and sorted(state["order"]) == list(range(6))
    other = resume.ResumableSampler(6, torch.Generator())
    other.load_state_dict(state)
    assert head + list(other) == state["order"]
    assert len(list(other)) == 6  # the next epoch draws a new order


def test_sampler_errors():
    with pytest.raises(TypeError, match="generator"):
        resume.ResumableSampler(4, generator=0)
    with pytest.raises(ValueError, match="num_samples"):
        resume.ResumableSampler(0, torch.Generator())
    sampler = resume.ResumableSampler(3, torch.Generator())
    with pytest.raises(ValueError, match="permutation"):
        sampler.load_state_dict({"order": [0, 0, 1], "position": 0})
    with pytest.raises(ValueError, match="position must be <= 3"):
        sampler.load_state_dict({"order": [0, 1, 2], "position": 4})
    with pytest.raises(TypeError, match="state"):
        sampler.load_state_dict([0, 1, 2])


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="seed"):
        resume.new_run(-1)
    with pytest.raises(TypeError, match="run"):
        resume.train("run", 1)
    with pytest.raises(ValueError, match="steps"):
        resume.train(resume.new_run(0), 0)
    with pytest.raises(ValueError, match="unknown component"):
        resume.load_checkpoint(tmp_path / "x.pt", omit=["weights"])
    with pytest.raises(TypeError, match="omit"):
        resume.load_checkpoint(tmp_path / "x.pt", omit="sampler")
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        resume.resume_in_fresh_process(tmp_path / "missing.pt", 1)
    with pytest.raises(ValueError, match="at least one variant"):
        path = resume.save_checkpoint(resume.new_run(0), tmp_path / "ck.pt")
        resume.resume_in_fresh_process(path, 1, [])


# ------------------------------------------------------------ issue 32: integrity and atomicity


def _rng_states():
    return torch.get_rng_state(), np.random.get_state(), random.getstate()


def _assert_same_rng_states(a, b):
    assert torch.equal(a[0], b[0])
    assert a[1][0] == b[1][0] and np.array_equal(a[1][1], b[1][1]) and a[1][2:] == b[1][2:]
    assert a[2] == b[2]


def _checkpoint(tmp_path, steps=3, edit=None, monkeypatch=None):
    run = resume.new_run(0)
    resume.train(run, steps)
    if edit is not None:
        real = resume.checkpoint_state
        # save_checkpoint's home module holds the name it calls
        monkeypatch.setattr(resume_checkpoint, "checkpoint_state", lambda r: edit(real(r)))
    return resume.save_checkpoint(run, tmp_path / "ck.pt")


def test_a_flipped_bit_anywhere_in_a_checkpoint_is_refused(tmp_path):
    path = _checkpoint(tmp_path)
    data = path.read_bytes()
    rng = np.random.default_rng(32)
    for at in rng.integers(0, len(data) * 8, 80):
        damaged = bytearray(data)
        damaged[at // 8] ^= 1 << (at % 8)
        path.write_bytes(bytes(damaged))
        before = _rng_states()
        with pytest.raises(
            ValueError, match=r"'ck.pt' (fails its checksum|is not a checkpoint written by)"
        ):
            resume.load_checkpoint(path)
        _assert_same_rng_states(before, _rng_states())
    path.write_bytes(data)
    resume.load_checkpoint(path)  # the intact file still loads


def test_resume_in_fresh_process_refuses_a_damaged_checkpoint(tmp_path):
    path = _checkpoint(tmp_path)
    data = bytearray(path.read_bytes())
    data[-100] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="'ck.pt' fails its checksum"):
        resume.resume_in_fresh_process(path, 1)


def test_a_checkpoint_missing_a_component_restores_nothing(tmp_path, monkeypatch):
    def drop_python_rng(state):
        del state["python_rng"]
        return state

    path = _checkpoint(tmp_path, edit=drop_python_rng, monkeypatch=monkeypatch)
    torch.manual_seed(5)
    before = _rng_states()
    with pytest.raises(resume.CorruptCheckpointError, match="'ck.pt' lacks python_rng"):
        resume.load_checkpoint(path)
    _assert_same_rng_states(before, _rng_states())


def test_a_load_that_fails_part_way_puts_the_global_rngs_back(tmp_path, monkeypatch):
    def bad_order(state):
        state["sampler"]["order"] = [0] * len(state["sampler"]["order"])
        return state

    path = _checkpoint(tmp_path, edit=bad_order, monkeypatch=monkeypatch)
    torch.manual_seed(5)
    np.random.seed(5)
    random.seed(5)
    before = _rng_states()
    with pytest.raises(
        ValueError, match=r"cannot be restored \(ValueError: .*permutation.*left as they were"
    ):
        resume.load_checkpoint(path)
    _assert_same_rng_states(before, _rng_states())


def test_save_onto_a_directory_refuses_and_leaves_no_temporary(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError, match="save_checkpoint: 'd' is a directory"):
        resume.save_checkpoint(resume.new_run(0), tmp_path / "d")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_a_failed_save_leaves_no_temporary_and_the_old_file(tmp_path, monkeypatch):
    path = _checkpoint(tmp_path)
    old = path.read_bytes()

    def no_room(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_room)
    with pytest.raises(OSError, match="No space left"):
        resume.save_checkpoint(resume.new_run(1), path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.pt"] and path.read_bytes() == old


def test_a_checkpoint_saved_before_the_first_step_resumes_bitwise(tmp_path):
    reference = resume.new_run(0)
    resume.train(reference, 7)
    path = resume.save_checkpoint(resume.new_run(0), tmp_path / "ck.pt")
    torch.manual_seed(99)
    again = resume.load_checkpoint(path)
    resume.train(again, 7)
    assert again.losses == reference.losses
    bitwise.assert_bitwise_equal(again.model.state_dict(), reference.model.state_dict())


def test_two_resumes_of_one_checkpoint_at_once_keep_their_own_results(tmp_path):
    path = _checkpoint(tmp_path, steps=2)
    other = tmp_path / "ck.pt.resumed"  # what another process writes, by the old fixed name
    other.write_bytes(b"another process's results")
    variants = {"a": [()], "b": [("numpy_rng",)]}
    got: dict = {}

    def one(name):
        got[name] = resume.resume_in_fresh_process(path, 2, variants[name])

    threads = [threading.Thread(target=one, args=(n,)) for n in variants]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert set(got["a"]) == {"complete"} and set(got["b"]) == {"without numpy_rng"}
    assert other.read_bytes() == b"another process's results"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.pt", "ck.pt.resumed"]


def test_save_checkpoint_names_itself_in_its_errors(tmp_path):
    with pytest.raises(TypeError, match="save_checkpoint: run must be Run"):
        resume.save_checkpoint(None, tmp_path / "ck.pt")
    with pytest.raises(TypeError, match="save_checkpoint: path must be"):
        resume.save_checkpoint(resume.new_run(0), None)
    with pytest.raises(FileNotFoundError, match="save_checkpoint: the folder of 'ck.pt'"):
        resume.save_checkpoint(resume.new_run(0), tmp_path / "no" / "ck.pt")
    with pytest.raises(FileNotFoundError, match="load_checkpoint: no checkpoint at 'no.pt'"):
        resume.load_checkpoint(tmp_path / "no.pt")


# ------------------------------------------------------------ issue 42: a reader trusting nothing


def _load_in_child(path, timeout=60):
    """load_checkpoint(path) in a child process: (ok, error text); a hang is a failure."""
    code = (
        "import sys\nfrom tricks_helpers import resume\n"
        "try:\n    resume.load_checkpoint(sys.argv[1])\n    print('LOADED')\n"
        "except Exception as exc:\n    print(type(exc).__name__ + ': ' + str(exc))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=timeout
    )
    return done.stdout.strip()


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "ck.pt"
    os.mkfifo(fifo)
    said = _load_in_child(fifo)  # main's reader blocked here forever
    assert said.startswith("CorruptCheckpointError") and "'ck.pt' is a FIFO" in said


def test_a_link_to_dev_zero_is_refused_without_reading(tmp_path):
    link = tmp_path / "ck.pt"
    link.symlink_to("/dev/zero")
    said = _load_in_child(link)  # main's reader read until memory ran out
    assert said.startswith("CorruptCheckpointError") and "'ck.pt' is a character device" in said


def test_a_huge_sparse_file_with_a_valid_header_is_refused_before_it_is_read(tmp_path):
    path = _checkpoint(tmp_path)
    with open(path, "r+b") as f:
        f.truncate(3 * 2**30)  # 3 GiB, sparse: a valid header, a payload that never ends
    start = time.monotonic()
    with pytest.raises(resume.CorruptCheckpointError, match="'ck.pt' holds 3,221,225,472 bytes"):
        resume.load_checkpoint(path)
    assert time.monotonic() - start < 5  # refused from fstat, not read


def test_a_file_whose_size_is_not_the_declared_one_is_refused_before_its_payload_is_read(
    tmp_path,
):
    path = _checkpoint(tmp_path)
    with open(path, "ab") as f:
        f.write(b"\0" * 10)
    with pytest.raises(resume.CorruptCheckpointError, match=r"'ck.pt' is not a checkpoint .*"):
        resume.load_checkpoint(path)
    assert path.read_bytes().startswith(MAGIC)


def test_every_error_of_the_reader_names_the_file(tmp_path):
    (tmp_path / "empty.pt").write_bytes(b"")
    (tmp_path / "folder.pt").mkdir()
    (tmp_path / "noread.pt").write_bytes(b"x")
    (tmp_path / "noread.pt").chmod(0)
    for name in ("empty.pt", "folder.pt", "missing.pt"):
        with pytest.raises((ValueError, OSError), match=repr(name)):
            resume.load_checkpoint(tmp_path / name)
    if os.geteuid() != 0:  # root reads anything
        with pytest.raises(PermissionError, match="'noread.pt'"):
            resume.load_checkpoint(tmp_path / "noread.pt")
