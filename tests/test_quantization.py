"""Tests of tricks_helpers.quantization: the block, weight bytes, matmul FLOPs and kernels."""

import copy
import warnings

import pytest
import torch
from torch import nn

from tricks_helpers import quantization as Q


def _legacy_int8(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization is deprecated (chapter 07)
        return torch.ao.quantization.quantize_dynamic(
            copy.deepcopy(model), {nn.Linear}, dtype=torch.qint8
        )


def test_transformer_mlp_is_deterministic_and_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b = Q.transformer_mlp(8, seed=3), Q.transformer_mlp(8, seed=3)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert [type(m) for m in a] == [nn.Linear, nn.GELU, nn.Linear] and not a.training
    assert a[0].weight.shape == (32, 8) and a[2].weight.shape == (8, 32)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a[0].weight, Q.transformer_mlp(8, seed=4)[0].weight)
    assert Q.transformer_mlp(8, expansion=2)[0].out_features == 16


def test_weight_bytes_counts_float_and_quantized_payloads():
    net = Q.transformer_mlp(16)
    params = 2 * 16 * 64 + 64 + 16
    assert Q.weight_bytes(net) == 4 * params
    assert Q.weight_bytes(copy.deepcopy(net).bfloat16()) == 2 * params
    assert Q.weight_bytes(net.state_dict()) == 4 * params
    legacy = _legacy_int8(net)
    weights, biases = 2 * 16 * 64, 64 + 16
    # qint8 weights (1 byte each), float32 biases, plus the unused float scale/int64 zero point
    # buffers each dynamic Linear keeps: 4 + 8 bytes per layer.
    assert Q.weight_bytes(legacy) == weights + 4 * biases + 2 * (4 + 8)


def test_weight_bytes_counts_shared_storage_once():
    lin = nn.Linear(4, 4, bias=False)
    tied = nn.Module()
    tied.a, tied.b = lin, nn.Linear(4, 4, bias=False)
    tied.b.weight = lin.weight
    assert Q.weight_bytes(tied) == 4 * 16


def test_matmul_flops_counts_float_and_int8_kernels_alike():
    net = Q.transformer_mlp(16)
    x = torch.randn(3, 16)
    expected = 2 * 3 * (16 * 64 + 64 * 16)
    assert Q.matmul_flops(net, x) == {"aten::addmm": expected}
    assert Q.matmul_flops(_legacy_int8(net), x) == {"quantized::linear_dynamic": expected}
    a = torch.randint(-128, 127, (32, 32), dtype=torch.int8)
    assert Q.matmul_flops(torch._int_mm, a, a) == {"aten::_int_mm": 2 * 32**3}
    assert Q.matmul_flops(torch.relu, x) == {}


def test_profiled_kernels_reports_the_innermost_matmul(capfd):
    net = Q.transformer_mlp(16)
    x = torch.randn(3, 16)
    assert Q.profiled_kernels(net, x) == {"aten::addmm": 2}
    assert "USDT" not in capfd.readouterr().err  # the profiler's start/stop lines are filtered
    assert Q.profiled_kernels(net, x, runs=3) == {"aten::addmm": 6}
    assert Q.profiled_kernels(_legacy_int8(net), x) == {"quantized::linear_dynamic": 2}
    assert Q.profiled_kernels(torch.relu, x) == {}


def test_kernel_kind():
    assert Q.kernel_kind("aten::addmm") == "float"
    assert Q.kernel_kind("onednn::qlinear_pointwise") == "int8"
    assert Q.kernel_kind("aten::_weight_int4pack_mm_for_cpu") == "int4"
    assert not (Q.INT8_KERNELS & Q.INT4_KERNELS) and not (Q.INT8_KERNELS & Q.FLOAT_KERNELS)


def test_errors():
    with pytest.raises(ValueError, match="hidden must be an integer >= 1"):
        Q.transformer_mlp(0)
    with pytest.raises(TypeError, match="expansion must be an integer"):
        Q.transformer_mlp(8, expansion=2.0)
    with pytest.raises(TypeError, match="expected an nn.Module or a state_dict"):
        Q.weight_bytes([torch.zeros(2)])
    with pytest.raises(TypeError, match="fn must be callable"):
        Q.matmul_flops(3)
    with pytest.raises(ValueError, match="runs must be an integer >= 1"):
        Q.profiled_kernels(torch.relu, torch.zeros(2), runs=0)
    with pytest.raises(ValueError, match="unknown kernel 'aten::conv2d'"):
        Q.kernel_kind("aten::conv2d")
    with pytest.raises(TypeError, match="name must be"):
        Q.kernel_kind(None)


def test_weight_bytes_of_a_meta_model_equals_the_real_one():
    real = Q.transformer_mlp(64)
    meta = Q.transformer_mlp(64).to("meta")
    assert Q.weight_bytes(real) == 132_352
    assert Q.weight_bytes(meta) == 132_352  # 65,536 when meta storages collided at address 0
    shared = {"a": meta[0].weight, "b": meta[0].weight}
    assert Q.weight_bytes(shared) == meta[0].weight.numel() * 4


def test_torchao_supports_decides_each_section_from_its_release():
    every = Q.torchao_supports("0.18.0")
    assert list(every) == list(Q.TORCHAO_NEEDED) and all(every.values())
    assert all(Q.torchao_supports("0.19.1+cu126").values())
    old = Q.torchao_supports("0.16.0")
    assert not old["int4 weight-only"] and old["int8 quantize_"] and old["QAT"]
    assert (
        old["configs without a CPU path"]
        and not Q.torchao_supports("0.13.0")["configs without a CPU path"]
    )  # int4_packing_format was packing_format in 0.13
    assert not Q.torchao_supports("0.17.9")["int4 weight-only"]
    assert Q.torchao_supports("0.18.0rc1")["int4 weight-only"]
    assert not any(Q.torchao_supports("0.12.0").values())


def test_torchao_needs_names_the_release_and_refuses_unknown_sections():
    assert Q.torchao_needs("int4 weight-only") == "torchao >= 0.18"
    assert Q.torchao_needs("int8 quantize_") == "torchao >= 0.13"
    with pytest.raises(ValueError, match="section must be one of .*'int4 weight-only'"):
        Q.torchao_needs("int4")
    with pytest.raises(TypeError, match="section must be str"):
        Q.torchao_needs(4)


def test_require_torchao_runs_from_0_13_and_names_the_sections_below():
    assert Q.require_torchao("0.18.0") == Q.torchao_supports("0.18.0")
    runs = Q.require_torchao("0.16.0")  # no longer all or nothing: int4 is skipped
    assert runs == Q.torchao_supports("0.16.0") and not runs["int4 weight-only"]
    assert Q.require_torchao("0.13.0")["int8 quantize_"]
    with pytest.raises(RuntimeError, match=r"int8 quantize_ needs torchao >= 0\.13") as info:
        Q.require_torchao("0.12.0")
    message = str(info.value)
    assert "int4 weight-only needs torchao >= 0.18 (PrototypeInt4WeightOnlyConfig)" in message
    assert "Install torchao>=0.13 (torchao>=0.18 runs every section" in message


@pytest.mark.parametrize(
    "version, error, match",
    [(18, TypeError, "version must be"), ("dev", ValueError, "must start with a number")],
)
def test_require_torchao_refuses_bad_versions(version, error, match):
    with pytest.raises(error, match=match):
        Q.require_torchao(version)
    with pytest.raises(error, match=match):
        Q.torchao_supports(version)


def test_payload_finds_the_integer_data_inside_a_quantized_weight():
    ao = pytest.importorskip("torchao.quantization")
    block = Q.transformer_mlp(64)
    ao.quantize_(block, ao.Int8WeightOnlyConfig(set_inductor_config=False))
    data = Q.payload(block[0].weight)
    assert data.dtype == torch.int8 and tuple(data.shape) == (256, 64)
    plain = torch.arange(6, dtype=torch.uint8)
    assert Q.payload(plain) is plain
    with pytest.raises(ValueError, match="holds no integer data"):
        Q.payload(torch.ones(3))
    with pytest.raises(TypeError, match="weight must be Tensor"):
        Q.payload([1, 2])
