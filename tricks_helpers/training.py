"""Small models, data and loops shared by the training chapters (introduced in chapter 02).

- :func:`digits`: scikit-learn's bundled 8x8 handwritten digits as tensors, with a seeded,
  stratified train/test split (no download; chapters 02, 04, 06, 07, 10);
- :func:`mlp`: a deterministic multi-layer perceptron (chapters 04, 05, 10);
- :func:`run_steps`: a training step function over a fixed, seeded sequence of mini-batches,
  so two variants see exactly the same batches (chapters 04, 10);
- :func:`accuracy`: top-1 accuracy of a classifier, evaluated in eval mode without grad
  (chapters 04, 06, 07).

Guarantees: the same arguments and ``seed`` give bitwise-identical weights, splits and batch
orders on every call; nothing here touches the global random state (weights are drawn inside
:func:`torch.random.fork_rng`, batch orders from private generators).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import nn

from tricks_helpers._checks import (
    check_bool,
    check_callable,
    check_choice,
    check_int,
    check_number,
    check_type,
)

__all__ = ["Digits", "digits", "mlp", "run_steps", "accuracy"]


class Digits(NamedTuple):
    """The digits data set as tensors: float inputs in ``[0, 1]``, int64 labels."""

    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor


def digits(*, test_fraction: float = 0.3, images: bool = False, seed: int = 0) -> Digits:
    """scikit-learn's 1,797 handwritten digits, split into train and test.

    Args:
        test_fraction: share of the samples held out for testing, stratified by class
            (``0`` keeps everything in the training split and leaves the test split empty).
        images: ``(N, 1, 8, 8)`` images instead of ``(N, 64)`` vectors.
        seed: seed of the split (``random_state`` of scikit-learn's ``train_test_split``).

    Returns:
        A :class:`Digits` tuple; pixel values are divided by 16, so they lie in ``[0, 1]``.

    Raises:
        TypeError: on wrong-typed arguments.
        ValueError: on a ``test_fraction`` outside ``[0, 1)``.
    """
    test_fraction = check_number(
        "digits", "test_fraction", test_fraction, minimum=0.0, maximum=0.99
    )
    check_bool("digits", "images", images)
    seed = check_int("digits", "seed", seed, minimum=0, maximum=2**32 - 1)
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X_np, y_np = load_digits(return_X_y=True)
    X = torch.tensor(X_np / 16.0, dtype=torch.float32)
    y = torch.tensor(y_np, dtype=torch.int64)
    if images:
        X = X.reshape(-1, 1, 8, 8)
    if test_fraction == 0:
        return Digits(X, y, X[:0], y[:0])
    idx_train, idx_test = train_test_split(
        torch.arange(len(y)).numpy(), test_size=test_fraction, random_state=seed, stratify=y_np
    )
    idx_train, idx_test = torch.from_numpy(idx_train), torch.from_numpy(idx_test)
    return Digits(X[idx_train], y[idx_train], X[idx_test], y[idx_test])


_ACTIVATIONS = ("relu", "gelu")


def mlp(
    in_features: int,
    hidden: int,
    out_features: int,
    blocks: int = 2,
    *,
    layers_per_block: int = 1,
    activation: str = "relu",
    batchnorm: bool = False,
    inplace: bool = False,
    seed: int = 0,
) -> nn.Sequential:
    """A multi-layer perceptron of ``blocks`` identical hidden blocks.

    Layout: ``Sequential(Linear(in, hidden), act, *blocks, Linear(hidden, out))`` where each
    block is ``Sequential`` of ``layers_per_block`` times ``Linear(hidden, hidden),
    [BatchNorm1d(hidden)], act``. All but the output layer get Kaiming-normal weights
    (``nonlinearity="relu"``), so activations keep their scale through deep stacks (PyTorch's
    default ``Linear`` init shrinks them about 3x per layer, down to float32 *denormals*,
    which are many times slower on CPU and would spoil every timing). Biases keep PyTorch's
    default init. The model is a plain ``nn.Sequential``, so
    ``torch.utils.checkpoint.checkpoint_sequential`` and per-layer loops work on it.

    Args:
        in_features, hidden, out_features: layer widths (>= 1).
        blocks: number of hidden blocks (>= 0).
        layers_per_block: ``Linear`` layers in each block (>= 1).
        activation: ``"relu"`` or ``"gelu"`` (GELU saves its input for backward, ReLU its output).
        batchnorm: put a ``BatchNorm1d`` before each activation inside the blocks (a ``bool``:
            a string such as ``"no"`` is refused rather than read as true).
        inplace: use ``ReLU(inplace=True)`` (only with ``activation="relu"``).
        seed: initial weights are drawn from ``torch.manual_seed(seed)`` inside ``fork_rng``.

    Returns:
        The model (float32, CPU, training mode).

    Raises:
        TypeError: on wrong-typed arguments.
        ValueError: on a width < 1, ``blocks`` < 0, ``layers_per_block`` < 1, an unknown
            activation, ``inplace`` with GELU, or a seed outside ``[0, 2**63)``.
    """
    for name, value in (
        ("in_features", in_features),
        ("hidden", hidden),
        ("out_features", out_features),
    ):
        check_int("mlp", name, value, minimum=1)
    check_int("mlp", "blocks", blocks, minimum=0)
    check_int("mlp", "layers_per_block", layers_per_block, minimum=1)
    check_choice("mlp", "activation", activation, _ACTIVATIONS)
    check_bool("mlp", "batchnorm", batchnorm)
    check_bool("mlp", "inplace", inplace)
    if inplace and activation != "relu":
        raise ValueError("mlp: inplace=True needs activation='relu' (GELU has no in-place variant)")
    check_int("mlp", "seed", seed, minimum=0, maximum=2**63 - 1)

    def act() -> nn.Module:
        return nn.ReLU(inplace=inplace) if activation == "relu" else nn.GELU()

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers: list[nn.Module] = [nn.Linear(in_features, hidden), act()]
        for _ in range(blocks):
            block: list[nn.Module] = []
            for _ in range(layers_per_block):
                block.append(nn.Linear(hidden, hidden))
                if batchnorm:
                    block.append(nn.BatchNorm1d(hidden))
                block.append(act())
            layers.append(nn.Sequential(*block))
        for m in layers:
            for lin in m.modules():
                if isinstance(lin, nn.Linear):
                    nn.init.kaiming_normal_(lin.weight, nonlinearity="relu")
        layers.append(nn.Linear(hidden, out_features))
        return nn.Sequential(*layers)


def run_steps(
    step: Callable[[torch.Tensor, torch.Tensor], torch.Tensor | float],
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    steps: int,
    batch_size: int,
    seed: int = 0,
) -> list[float]:
    """Call ``step(xb, yb)`` on ``steps`` seeded random mini-batches; return the losses.

    The batch order comes from a private ``torch.Generator`` seeded with ``seed`` (the global
    random state is not touched), so two training variants given the same ``seed`` see
    identical batches in identical order.

    Args:
        step: one training step; returns the loss (a tensor or a float).
        X, y: inputs and targets, first dimension = samples (same length).
        steps: number of steps (>= 1).
        batch_size: samples per step (1 <= batch_size <= len(X)); each epoch is a fresh
            permutation, batches do not straddle epochs.
        seed: seed of the batch order.

    Returns:
        The loss of every step, as floats.

    Raises:
        TypeError: if ``step`` is not callable or ``X``/``y`` are not tensors.
        ValueError: on mismatched lengths, bad counts, or a non-finite loss (with the step number).
    """
    check_callable("run_steps", "step", step)
    check_type("run_steps", "X", X, torch.Tensor)
    check_type("run_steps", "y", y, torch.Tensor)
    if X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise ValueError(
            f"run_steps: X and y need the same non-zero length, got {X.shape[0]} and {y.shape[0]}"
        )
    steps = check_int("run_steps", "steps", steps, minimum=1)
    batch_size = check_int("run_steps", "batch_size", batch_size, minimum=1, maximum=X.shape[0])
    seed = check_int("run_steps", "seed", seed, minimum=0)
    gen = torch.Generator().manual_seed(seed)
    per_epoch = X.shape[0] // batch_size
    losses: list[float] = []
    order = torch.randperm(X.shape[0], generator=gen)
    for i in range(steps):
        j = i % per_epoch
        if i > 0 and j == 0:
            order = torch.randperm(X.shape[0], generator=gen)
        idx = order[j * batch_size : (j + 1) * batch_size].to(X.device)
        loss = step(X[idx], y[idx])
        # detach first: float() of a tensor that requires grad warns on recent torch
        loss = float(loss.detach() if isinstance(loss, torch.Tensor) else loss)
        if loss != loss or loss in (float("inf"), float("-inf")):
            raise ValueError(f"run_steps: non-finite loss {loss} at step {i}")
        losses.append(loss)
    return losses


def accuracy(
    model: Callable[[torch.Tensor], torch.Tensor],
    X: torch.Tensor,
    y: torch.Tensor,
    batch_size: int | None = None,
) -> float:
    """Top-1 accuracy of ``model`` on ``(X, y)``, in eval mode and without grad.

    An ``nn.Module`` is switched to ``eval()`` for the evaluation (Dropout off, BatchNorm on
    its running statistics) and put back in the mode each of its submodules had, even when
    the model raises. Other callables (a compiled or exported model) are called as they are.

    Args:
        model: a callable returning logits of shape ``(N, classes)``.
        X: inputs, first dimension ``N``.
        y: integer labels of shape ``(N,)``.
        batch_size: evaluate in batches of this size (default: all at once). Use the batch
            size a static-shape (exported) model was traced with.

    Returns:
        The fraction of correct predictions, in ``[0, 1]``.

    Raises:
        TypeError: on a non-callable model or non-tensor data.
        ValueError: on mismatched lengths, empty data, a non-positive ``batch_size``,
            logits of the wrong shape, or NaN logits (refused rather than counted: the argmax
            of a NaN row is class 0, which made all-NaN logits score 1.0 on labels 0).
    """
    check_callable("accuracy", "model", model)
    check_type("accuracy", "X", X, torch.Tensor)
    check_type("accuracy", "y", y, torch.Tensor)
    if len(X) != len(y) or len(X) == 0:
        raise ValueError(
            f"accuracy: X and y must be non-empty and the same length, got {len(X)} and {len(y)}"
        )
    if y.dim() != 1:
        raise ValueError(f"accuracy: y must be 1-D class labels, got shape {tuple(y.shape)}")
    n = len(X)
    batch_size = (
        n if batch_size is None else check_int("accuracy", "batch_size", batch_size, minimum=1)
    )
    modes = [(m, m.training) for m in model.modules()] if isinstance(model, nn.Module) else []
    if isinstance(model, nn.Module):
        model.eval()
    correct = 0
    try:
        with torch.no_grad():
            for i in range(0, n, batch_size):
                logits = model(X[i : i + batch_size])
                if logits.dim() != 2 or logits.shape[0] != len(X[i : i + batch_size]):
                    raise ValueError(
                        f"accuracy: model must return logits (batch, classes), got "
                        f"shape {tuple(logits.shape)}"
                    )
                if logits.is_floating_point() or logits.is_complex():
                    bad = int(torch.isnan(logits).any(dim=1).sum())
                    if bad:
                        raise ValueError(
                            f"accuracy: the model returned NaN logits in {bad} of "
                            f"{logits.shape[0]} rows (batch at index {i}); argmax of NaN is an "
                            f"arbitrary class, so no accuracy is computed"
                        )
                correct += int((logits.argmax(dim=1) == y[i : i + batch_size]).sum())
    finally:
        for m, training in modes:
            m.training = training
    return correct / n
