"""Tests of tricks_helpers.quant (chapter 07)."""

import logging

import pytest
import torch
from torch import nn

from tricks_helpers.quant import accuracy, captured_logs, state_dict_bytes


def test_state_dict_bytes_scales_with_parameters():
    small, big = nn.Linear(10, 10), nn.Linear(100, 100)
    s, b = state_dict_bytes(small), state_dict_bytes(big)
    payload = (100 * 100 + 100) * 4  # float32 weight + bias
    assert payload <= b < payload + 4096 and s < 4096  # payload + small zip/pickle overhead
    assert state_dict_bytes(big.state_dict()) == b
    half = state_dict_bytes(big.half())
    assert payload // 2 <= half < payload // 2 + 4096


def test_state_dict_bytes_errors():
    with pytest.raises(TypeError, match="expected an nn.Module or a state_dict mapping, got list"):
        state_dict_bytes([1, 2])


def test_accuracy_counts_correct_and_batches():
    X = torch.eye(4)
    y = torch.tensor([0, 1, 2, 0])
    ident = nn.Identity()
    assert accuracy(ident, X, y) == 0.75
    assert accuracy(ident, X, y, batch_size=3) == 0.75
    assert accuracy(lambda x: x, X, y, batch_size=1) == 0.75


def test_accuracy_errors():
    X, y = torch.eye(4), torch.arange(4)
    with pytest.raises(ValueError, match="same length"):
        accuracy(nn.Identity(), X, y[:3])
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        accuracy(nn.Identity(), X, y, batch_size=0)
    with pytest.raises(ValueError, match="logits"):
        accuracy(lambda x: x.sum(1), X, y)
    with pytest.raises(ValueError, match="1-D class labels"):
        accuracy(nn.Identity(), X, y[:, None])
    with pytest.raises(ValueError, match="must be callable"):
        accuracy(3, X, y)


def test_captured_logs_records_and_restores(capsys):
    logger = logging.getLogger("tricks_test.child")
    parent = logging.getLogger("tricks_test")
    seen = []

    class H(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    parent.addHandler(H())
    try:
        with captured_logs("tricks_test") as records:
            logger.warning("hidden %d", 1)
            parent.warning("also hidden")
        assert [r.getMessage() for r in records] == ["hidden 1", "also hidden"]
        assert seen == []
        parent.warning("shown")
        assert seen == ["shown"]
        assert parent.propagate is True
    finally:
        parent.handlers.clear()


def test_captured_logs_errors():
    with pytest.raises(ValueError, match="non-empty logger names"):
        with captured_logs():
            pass
    with pytest.raises(ValueError, match="non-empty logger names"):
        with captured_logs(""):
            pass
