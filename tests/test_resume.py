"""Tests of tricks_helpers.resume: bitwise resumption, the sampler's state, error paths."""

import numpy as np
import pytest
import torch

from tricks_helpers import bitwise, resume


def test_resume_in_process_is_bitwise_equal(tmp_path):
    reference = resume.new_run(0)
    resume.train(reference, 8)
    first = resume.new_run(0)
    resume.train(first, 3)
    path = resume.save_checkpoint(first, tmp_path / "ck.pt")
    torch.manual_seed(99)  # disturb the global RNGs: the checkpoint must restore them
    np.random.seed(99)
    again = resume.load_checkpoint(path)
    resume.train(again, 5)
    assert again.losses == reference.losses[3:]
    bitwise.assert_bitwise_equal(again.model.state_dict(), reference.model.state_dict())


@pytest.mark.parametrize("omitted", ["torch_rng", "sampler", "optimizer"])
def test_an_omitted_component_changes_the_run(tmp_path, omitted):
    reference = resume.new_run(0)
    resume.train(reference, 8)
    first = resume.new_run(0)
    resume.train(first, 3)
    path = resume.save_checkpoint(first, tmp_path / "ck.pt")
    torch.manual_seed(99)
    again = resume.load_checkpoint(path, omit=[omitted])
    resume.train(again, 5)
    assert again.losses != reference.losses[3:]


def test_resume_in_fresh_process(tmp_path):
    reference = resume.new_run(0)
    resume.train(reference, 4)
    first = resume.new_run(0)
    resume.train(first, 2)
    path = resume.save_checkpoint(first, tmp_path / "ck.pt")
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
