"""Tests of tricks_helpers.memory.sizes (chapter 05): exact byte counts."""

import warnings

import pytest
import torch
from torch import nn

from tricks_helpers import memory


def test_linear_saves_its_input_and_weight_exactly():
    lin = nn.Linear(8, 4)
    x = torch.randn(16, 8)
    # the weight's gradient needs the input (16*8 floats); nothing needs the weight itself
    assert memory.saved_activation_bytes(lin, x) == 16 * 8 * 4
    # when the input needs a gradient too, the weight (4*8 floats) is saved as well
    x.requires_grad_()
    assert memory.saved_activation_bytes(lin, x) == (16 * 8 + 4 * 8) * 4
    assert memory.saved_activation_bytes(lin, x, ignore=lin.parameters()) == 16 * 8 * 4


def test_report_counts_tensors_storages_and_ignored():
    lin = nn.Linear(8, 4)
    rep = memory.saved_tensors_report(
        lin, torch.randn(2, 8, requires_grad=True), ignore=list(lin.parameters())
    )
    assert rep.bytes == 2 * 8 * 4
    assert rep.ignored_bytes == 4 * 8 * 4
    assert rep.storages == 1
    assert rep.tensors >= 2
    assert rep.result.shape == (2, 4)
    assert "bytes=64" in repr(rep)


def test_shared_storage_is_counted_once():
    x = torch.randn(100, requires_grad=True)
    # x * x saves x twice (as self and other): one storage
    assert memory.saved_activation_bytes(lambda t: t * t, x) == 100 * 4


def test_a_saved_view_counts_its_whole_storage():
    x = torch.randn(10, 10, requires_grad=True)
    base = x * 1.0  # a non-leaf whose storage is 400 bytes
    # exp saves its new 1x10 result
    assert memory.saved_activation_bytes(lambda: base[:1].exp()) == 40
    assert memory.saved_activation_bytes(lambda: base[:1] * base[:1]) == 400  # view of base


def test_nothing_saved_under_no_grad_is_zero_not_an_error():
    lin = nn.Linear(8, 4)
    with torch.no_grad():
        assert memory.saved_activation_bytes(lin, torch.randn(3, 8)) == 0
    assert memory.saved_activation_bytes(lambda: torch.randn(3) * 2) == 0


def test_kwargs_are_passed_and_hooks_are_removed_after_an_error():
    def f(x, *, scale):
        return (x * scale).exp()

    x = torch.randn(5, requires_grad=True)
    assert memory.saved_activation_bytes(f, x, scale=2.0) == 5 * 4  # exp saves its result
    with pytest.raises(RuntimeError, match="boom"):
        memory.saved_activation_bytes(lambda: (_ for _ in ()).throw(RuntimeError("boom")))
    # no hook left behind: a normal backward still works
    y = (x * x).sum()
    y.backward()
    assert torch.allclose(x.grad, 2 * x.detach())


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(TypeError, match="fn must be callable"):
        memory.saved_activation_bytes(42)
    with pytest.raises(TypeError, match="ignore entry must be Tensor"):
        memory.saved_activation_bytes(lambda: None, ignore=[1, 2])
    with pytest.raises(TypeError, match="fn must be callable"):
        memory.peak_cuda_bytes("not a function")
    with pytest.raises(ValueError, match="must be a CUDA device"):
        memory.peak_cuda_bytes(lambda: None, device="cpu")


def test_grad_bytes_and_set_to_none():
    lin = nn.Linear(8, 4)
    assert memory.grad_bytes(lin) == 0
    lin(torch.randn(2, 8)).sum().backward()
    assert memory.grad_bytes(lin) == (8 * 4 + 4) * 4
    lin.zero_grad(set_to_none=False)
    assert memory.grad_bytes(lin) == (8 * 4 + 4) * 4
    lin.zero_grad(set_to_none=True)
    assert memory.grad_bytes(lin) == 0
    with pytest.raises(TypeError, match="grad_bytes: model must be Module"):
        memory.grad_bytes(torch.ones(2))


def test_tensor_bytes_dedupes_and_validates():
    a = torch.zeros(10)
    assert memory.tensor_bytes([a, a[:5], None]) == 40
    assert memory.tensor_bytes([]) == 0
    with pytest.raises(TypeError, match="expected tensors or None"):
        memory.tensor_bytes([a, "x"])


def test_fmt_bytes():
    assert memory.fmt_bytes(0) == "0 B"
    assert memory.fmt_bytes(1023) == "1,023 B"
    assert memory.fmt_bytes(2**20) == "1,048,576 B (1.00 MiB)"
    assert memory.fmt_bytes(3 * 2**30) == "3,221,225,472 B (3.00 GiB)"
    with pytest.raises(ValueError, match="n must be an integer >= 0"):
        memory.fmt_bytes(-1)
    for bad in (1.5, True, "3"):
        with pytest.raises(TypeError, match="n must be an integer"):
            memory.fmt_bytes(bad)


def test_state_dict_bytes_scales_with_parameters():
    small, big = torch.nn.Linear(10, 10), torch.nn.Linear(100, 100)
    s, b = memory.state_dict_bytes(small), memory.state_dict_bytes(big)
    assert b - s > (100 * 100 - 10 * 10) * 4 * 0.9
    assert memory.state_dict_bytes(big.state_dict()) == b
    assert memory.state_dict_bytes(big.half()) < b * 0.6


def test_state_dict_bytes_errors():
    with pytest.raises(TypeError, match="expected an nn.Module or a state_dict mapping"):
        memory.state_dict_bytes([1, 2])


# --- meta tensors (issue 12: they all have data_ptr() == 0 and used to collide)


def test_meta_tensors_are_counted_by_shape_and_dtype():
    lin = nn.Linear(8, 4, device="meta")
    x = torch.empty(16, 8, device="meta")
    # used to return 0: every meta storage had the key of the ignored (meta) parameters
    assert memory.saved_activation_bytes(lin, x, ignore=lin.parameters()) == 16 * 8 * 4
    x.requires_grad_()
    assert memory.saved_activation_bytes(lin, x) == (16 * 8 + 4 * 8) * 4
    with torch.no_grad():
        assert memory.saved_activation_bytes(lin, x) == 0


def test_meta_tensor_bytes_dedupes_views_but_not_distinct_storages():
    a, b = torch.empty(10, 10, device="meta"), torch.empty(3, device="meta", dtype=torch.float16)
    assert memory.tensor_bytes([a, a[:2], b]) == 400 + 6
    model = nn.Sequential(nn.Linear(100, 100), nn.Linear(100, 10)).to("meta")
    assert memory.tensor_bytes(model.parameters()) == (100 * 100 + 100 + 100 * 10 + 10) * 4


def test_meta_and_real_counts_agree():
    real = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8))
    meta = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8)).to("meta")
    b_real = memory.saved_activation_bytes(real, torch.randn(5, 32), ignore=real.parameters())
    b_meta = memory.saved_activation_bytes(
        meta, torch.empty(5, 32, device="meta"), ignore=meta.parameters()
    )
    assert b_real == b_meta > 0


def test_tensor_bytes_of_temporaries_from_a_generator():
    # each temporary is dropped by the generator before the next is made; an address reused
    # by the allocator must not make two tensors count once
    assert memory.tensor_bytes(torch.zeros(256) for _ in range(4)) == 4 * 256 * 4


# --- CPU allocator: peak and retained bytes from the profiler's allocation events

# --- the training-state budget: parameters + gradients + optimizer state


def _trained(optimizer_factory, dtype=torch.float32):
    torch.manual_seed(0)
    model = nn.Linear(100, 10).to(dtype)
    opt = optimizer_factory(model.parameters())
    model(torch.randn(4, 100, dtype=dtype)).float().sum().backward()
    opt.step()
    return model, opt


def test_optimizer_state_bytes_per_optimizer():
    n = 100 * 10 + 10
    model, sgd = _trained(lambda p: torch.optim.SGD(p, lr=0.1))
    assert memory.optimizer_state_bytes(sgd) == 0
    model, mom = _trained(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))
    assert memory.optimizer_state_bytes(mom) == n * 4
    model, adam = _trained(lambda p: torch.optim.Adam(p))
    assert memory.optimizer_state_bytes(adam) == 2 * n * 4 + 2 * 4  # + a float32 step per tensor
    fresh = torch.optim.Adam(nn.Linear(3, 3).parameters())
    assert memory.optimizer_state_bytes(fresh) == 0  # state is created lazily


def test_training_state_bytes_budget():
    n = 100 * 10 + 10
    model, adam = _trained(lambda p: torch.optim.Adam(p))
    budget = memory.training_state_bytes(model, adam)
    assert (budget.params, budget.grads, budget.numel) == (n * 4, n * 4, n)
    assert budget.total == budget.params + budget.grads + budget.optimizer
    assert 16 <= budget.per_parameter < 16.01
    model16, adam16 = _trained(lambda p: torch.optim.Adam(p), dtype=torch.bfloat16)
    assert 8 <= memory.training_state_bytes(model16, adam16).per_parameter < 8.01
    assert memory.training_state_bytes(nn.Linear(2, 2)).optimizer == 0
    assert memory.training_state_bytes(nn.ReLU()).per_parameter == 0.0
    with pytest.raises(TypeError, match="training_state_bytes: model must be Module"):
        memory.training_state_bytes("net")
    with pytest.raises(TypeError, match="training_state_bytes: optimizer must be Optimizer"):
        memory.training_state_bytes(model, {"lr": 1})
    with pytest.raises(TypeError, match="optimizer_state_bytes: optimizer must be Optimizer"):
        memory.optimizer_state_bytes(model)


def test_grad_bytes_counts_a_sparse_gradient_by_indices_and_values():
    emb = nn.Embedding(10**6, 64, sparse=True)
    emb(torch.tensor([1, 5, 9])).sum().backward()
    assert emb.weight.grad.is_sparse
    # 3 rows of 64 float32 values + their int64 row indices, not the 256,000,000-byte table
    assert memory.grad_bytes(emb) == 3 * 64 * 4 + 3 * 8


def test_tensor_bytes_counts_sparse_csr_by_its_parts():
    dense = torch.zeros(100, 100)
    dense[3, 7] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Sparse CSR tensor support is in beta"
        csr = dense.to_sparse_csr()
    held = memory.tensor_bytes([csr])
    assert 101 * 8 + 8 + 4 <= held < 1024  # row pointers, one column index, one value
    assert memory.tensor_bytes([dense]) == 40_000


def test_memory_counts_torchao_int8_weights_by_their_inner_tensors():
    torchao_quant = pytest.importorskip("torchao.quantization")
    from tricks_helpers import quantization

    model = nn.Sequential(nn.Linear(256, 256))
    torchao_quant.quantize_(model, torchao_quant.Int8WeightOnlyConfig())
    assert type(model[0].weight) is not torch.Tensor  # a tensor subclass
    held = memory.tensor_bytes(model.parameters())
    assert held == quantization.weight_bytes(model)
    assert held < 256 * 256 * 2  # int8 payload, not float32 (263,168 before)
    assert memory.training_state_bytes(model).params == held
