"""Tests of tricks_helpers.gpu_checks: the pure logic on made-up spans, the probe on the CPU."""

from __future__ import annotations

import pytest
import torch

from tricks_helpers import gpu_checks
from tricks_helpers.traces import TraceSpan


def span(name, start, dur, stream, cat):
    return TraceSpan(name=name, start_us=start, duration_us=dur, thread=stream, category=cat)


COPY, KERNEL = gpu_checks.COPY_CATEGORY, gpu_checks.KERNEL_CATEGORY


def test_overlapped_copies_counts_copies_concurrent_with_kernels_on_other_streams():
    spans = [
        span("Memcpy HtoD (Pinned -> Device)", 0, 10, "stream 20", COPY),  # overlaps k1
        span("Memcpy HtoD (Pinned -> Device)", 30, 5, "stream 20", COPY),  # after every kernel
        span("Memcpy HtoD (Pageable -> Device)", 2, 4, "stream 7", COPY),  # same stream as k1
        span("Memcpy DtoH (Device -> Pageable)", 1, 2, "stream 20", COPY),  # other direction
        span("volta_sgemm_128x64_nn", 1, 20, "stream 7", KERNEL),
        span("aten::mm", 0, 40, "thread 1", "cpu_op"),  # a CPU op is not a kernel
    ]
    assert gpu_checks.overlapped_copies(spans) == (1, 3)
    assert gpu_checks.overlapped_copies(spans, "DtoH") == (1, 1)
    assert gpu_checks.overlapped_copies([]) == (0, 0)


def test_touching_intervals_do_not_overlap():
    spans = [span("Memcpy HtoD", 0, 10, "s1", COPY), span("k", 10, 5, "s2", KERNEL)]
    assert gpu_checks.overlapped_copies(spans) == (0, 1)


def test_copy_kinds_counts_copies_by_name():
    spans = [
        span("Memcpy HtoD (Pinned -> Device)", 0, 1, "s", COPY),
        span("Memcpy HtoD (Pinned -> Device)", 2, 1, "s", COPY),
        span("Memcpy HtoD (Pageable -> Device)", 4, 1, "s", COPY),
        span("k", 0, 1, "s", KERNEL),
    ]
    assert gpu_checks.copy_kinds(spans) == {
        "Memcpy HtoD (Pinned -> Device)": 2,
        "Memcpy HtoD (Pageable -> Device)": 1,
    }


def test_profile_spans_records_the_work_on_cpu(tmp_path, capfd):
    x = torch.ones(64, 64)
    spans = gpu_checks.profile_spans(lambda: x @ x)
    assert "USDT" not in capfd.readouterr().err  # the profiler's start/stop lines are filtered
    assert any(s.name == "aten::mm" and s.category == "cpu_op" for s in spans)
    kept = gpu_checks.profile_spans(lambda: x @ x, tmp_path / "t.json")
    assert (tmp_path / "t.json").exists() and any(s.name == "aten::mm" for s in kept)
    if not torch.cuda.is_available():
        assert gpu_checks.overlapped_copies(spans) == (0, 0)
    with pytest.raises(TypeError, match="^profile_spans: fn must be callable"):
        gpu_checks.profile_spans(3)


def test_tensor_core_kernels_by_name():
    spans = [
        span("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", 0, 1, "s", KERNEL),
        span(
            "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
            0,
            1,
            "s",
            KERNEL,
        ),
        span("volta_sgemm_128x64_nn", 0, 1, "s", KERNEL),
        span("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", 5, 1, "s", KERNEL),
        span("hmma_not_a_kernel", 0, 1, "t", "cpu_op"),
    ]
    assert gpu_checks.tensor_core_kernels(spans) == [
        "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
        "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
    ]


@pytest.mark.parametrize(
    "name, tensor_cores",
    [
        ("volta_h884gemm_64x64_ldg8_nn", True),
        ("turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_tn", True),
        ("cutlass_80_tensorop_h16816gemm_relu_256x128_32x3_nn_align8", True),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", True),
        ("sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4", True),
        ("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN", True),
        # issue 33: float32 (SIMT) members of the xmma/nvjet families, and a bare 884 in a number
        (
            "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma",
            False,
        ),
        ("nvjet_sss_64x64_64x8_2x1_v_bz_TNN", False),
        ("reduce_kernel<512, 1, 18846>", False),
        ("gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4, 4, 884>", False),
        ("volta_sgemm_128x64_nn", False),
    ],
)
def test_is_tensor_core_kernel(name, tensor_cores):
    assert gpu_checks.is_tensor_core_kernel(name) is tensor_cores
    spans = [span(name, 0, 1, "s", KERNEL), span(name, 2, 1, "s", KERNEL)]
    assert gpu_checks.tensor_core_kernels(spans) == ([name] if tensor_cores else [])
    assert gpu_checks.kernel_names(spans + [span("x", 0, 1, "t", "cpu_op")]) == [name]


def test_copies_on_side_streams_is_the_prefetcher_invariant():
    """Issue 33, 03 c55: a copy issued on a stream that runs no kernel, whatever the timing."""
    copy = "Memcpy HtoD (Pinned -> Device)"
    plain = [  # every copy queued on the computing stream: none beside the kernels
        span(copy, 0, 5, "stream 7", COPY),
        span("k", 5, 50, "stream 7", KERNEL),
        span(copy, 55, 5, "stream 7", COPY),
        span("k", 60, 50, "stream 7", KERNEL),
    ]
    prefetched = [  # copies on a side stream; the second ran after the first kernel ended
        span(copy, 0, 5, "stream 20", COPY),
        span("k", 5, 50, "stream 7", KERNEL),
        span(copy, 56, 5, "stream 20", COPY),
        span("k", 61, 50, "stream 7", KERNEL),
        span("Memcpy DtoH (Device -> Pinned)", 120, 1, "stream 7", COPY),
    ]
    assert gpu_checks.copies_on_side_streams(plain) == (0, 2)
    assert gpu_checks.copies_on_side_streams(prefetched) == (2, 2)
    assert gpu_checks.overlapped_copies(prefetched) == (0, 2)  # timing: no overlap this time
    assert gpu_checks.copies_on_side_streams(prefetched, "DtoH") == (0, 1)
    assert gpu_checks.copies_on_side_streams([]) == (0, 0)
    with pytest.raises(ValueError, match="direction must be one of"):
        gpu_checks.copies_on_side_streams(plain, "sideways")
    with pytest.raises(TypeError, match=r"^copies_on_side_streams: spans\[...\] must be TraceSpan"):
        gpu_checks.copies_on_side_streams([("k", 0, 1)])
    with pytest.raises(TypeError, match="^is_tensor_core_kernel: name must be str"):
        gpu_checks.is_tensor_core_kernel(884)


def test_bad_arguments():
    with pytest.raises(TypeError, match="^overlapped_copies: spans must be list or tuple"):
        gpu_checks.overlapped_copies("trace.json")
    with pytest.raises(TypeError, match=r"^tensor_core_kernels: spans\[...\] must be TraceSpan"):
        gpu_checks.tensor_core_kernels([("k", 0, 1)])
    with pytest.raises(ValueError, match="direction must be one of 'HtoD', 'DtoH', 'DtoD'"):
        gpu_checks.overlapped_copies([], "up")
    with pytest.raises(ValueError, match="device must be one of 'cuda', 'cpu'"):
        gpu_checks.cublas_product_without_workspace_config("mps")
    with pytest.raises(ValueError, match="size must be an integer >= 1"):
        gpu_checks.cublas_product_without_workspace_config("cpu", size=0)


def test_probe_runs_without_the_variable_on_cpu(monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # removed for the child
    assert gpu_checks.cublas_product_without_workspace_config("cpu", size=8) == (
        "bitwise equal twice"
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_probe_on_cuda_matches_the_release():
    from tricks_helpers import determinism

    expected = "raises" if determinism.cublas_workspace_required() else "bitwise equal twice"
    assert gpu_checks.cublas_product_without_workspace_config("cuda") == expected


SNAPSHOT = {
    "segments": [],
    "device_traces": [
        [
            {"action": "segment_alloc", "size": 256, "addr": 0},
            {"action": "alloc", "size": 256, "addr": 0},
            {"action": "free_requested", "size": 256, "addr": 0},
            {"action": "free_completed", "size": 256, "addr": 0},
            {"action": "alloc", "size": 64, "addr": 0},
            {"action": "segment_free", "size": 256, "addr": 0},
        ]
    ],
}


def test_allocator_actions_and_timeline_from_a_snapshot():
    acts = gpu_checks.allocator_actions(SNAPSHOT)
    assert acts["segment_free"] == 1 and acts["alloc"] == 2 and acts["free_completed"] == 1
    assert gpu_checks.allocated_timeline(SNAPSHOT) == [0, 256, 256, 0, 64, 64]


def test_snapshot_errors():
    with pytest.raises(TypeError, match="^allocator_actions: snapshot must be dict"):
        gpu_checks.allocator_actions([])
    with pytest.raises(ValueError, match="no device_traces for device 1"):
        gpu_checks.allocated_timeline(SNAPSHOT, device=1)
    with pytest.raises(ValueError, match="no device_traces for device 0"):
        gpu_checks.allocated_timeline({"segments": []})
