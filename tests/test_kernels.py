"""Tests of tricks_helpers.kernels (chapter 06)."""

import os
import sys

import pytest
import torch
from torch import nn

from tricks_helpers.kernels import GeneratedCode, compiled_code, onednn_primitives

# The shape of Inductor's wrapper module for torch 2.13 (abridged): kernel definitions at
# module level, calls inside Runner.call.
WRAPPER = """
cpp_fused_relu_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r'''
extern "C" void kernel(const float* in_ptr0) { /* extern_kernels.convolution( */ }
''')


cpp_fused__native_batch_norm_legit_no_training_add_relu_1 = async_compile.cpp_pybinding(
    ['const float*'], r'''...''')


async_compile.wait(globals())

class Runner:
    def call(self, args):
        buf0 = empty_strided_cpu((1, 3, 16, 16), (768, 1, 48, 3), torch.float32)
        cpp_fused_relu_0(arg10_1, buf0)
        buf1 = torch.ops.mkldnn._convolution_pointwise.default(buf0, _frozen_param32, [1, 1])
        assert_size_stride(buf2, (1, 16), (16, 1), 'torch.ops.mkldnn._convolution_pointwise')
        buf3 = torch.ops.mkldnn._convolution_pointwise.binary(buf2, buf1, 'add')
        buf4 = extern_kernels.convolution(buf3, arg1_1, stride=(1, 1))
        extern_kernels.addmm(arg2_1, buf4, arg3_1, alpha=1, beta=1, out=buf5)
        return (buf5, )
"""


def test_generated_code_parsing():
    code = GeneratedCode((WRAPPER,))
    assert code.graphs == 1
    assert code.kernels == (
        "cpp_fused_relu_0",
        "cpp_fused__native_batch_norm_legit_no_training_add_relu_1",
    )
    assert code.kernels_fusing("batch_norm") == 1 and code.kernels_fusing("relu") == 2
    assert dict(code.extern_calls) == {
        "mkldnn._convolution_pointwise": 1,
        "mkldnn._convolution_pointwise.binary": 1,
        "extern_kernels.convolution": 1,
        "extern_kernels.addmm": 1,
    }
    two = GeneratedCode((WRAPPER, WRAPPER))
    assert two.graphs == 2 and len(two.kernels) == 4
    assert two.extern_calls["extern_kernels.convolution"] == 2
    with pytest.raises(TypeError, match="kernels_fusing: op must be str, got int"):
        code.kernels_fusing(3)


def test_compiled_code_captures_a_real_compile():
    """A graph of one matmul: Inductor calls a library kernel and compiles no C++."""

    def f(a, b):
        return torch.mm(a, b)

    compiled = torch.compile(f)
    a, b = torch.randn(4, 3), torch.randn(3, 5)
    out, code = compiled_code(compiled, a, b)
    assert torch.allclose(out, a @ b)
    assert code.graphs == 1 and code.kernels == ()
    assert code.extern_calls == {"extern_kernels.mm": 1}
    with pytest.raises(ValueError, match="nothing was compiled during the call"):
        compiled_code(compiled, a, b)  # already compiled for these shapes
    with pytest.raises(TypeError, match="compiled_code: fn must be callable, got int"):
        compiled_code(3)


@pytest.mark.skipif(
    not torch.backends.mkldnn.is_available() or sys.platform.startswith("win"),
    reason="needs oneDNN and POSIX file descriptors",
)
def test_onednn_primitives_counts_and_restores_stdout(capfd):
    conv = nn.Conv2d(16, 16, 3, padding=1).eval()
    x = torch.randn(1, 16, 64, 64)  # large enough for PyTorch to pick oneDNN on the CPU
    with torch.no_grad():
        conv(x)
        counts = onednn_primitives(conv, x)
    assert counts["convolution"] == 1
    assert set(counts) <= {"convolution", "reorder"}
    print("after")
    os.write(1, b"fd1\n")
    captured = capfd.readouterr()
    assert "onednn_verbose" not in captured.out and "after" in captured.out
    assert "fd1" in captured.out
    assert onednn_primitives(lambda: torch.ones(3) + 1) == {}  # nothing through oneDNN
    with pytest.raises(TypeError, match="onednn_primitives: fn must be callable"):
        onednn_primitives(None)
