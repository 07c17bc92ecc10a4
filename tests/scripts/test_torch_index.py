"""scripts/release/torch_index.py: the CPU build of torch unless there is an NVIDIA GPU."""

from __future__ import annotations

import subprocess
import sys
import time

from scripts.release import torch_index


def test_linux_without_a_gpu_takes_the_cpu_index_when_it_answers():
    url, why = torch_index.choose("linux", gpu=lambda: False, probe=lambda u: True)
    assert url == torch_index.CPU_INDEX == "https://download.pytorch.org/whl/cpu"
    assert why.startswith("no NVIDIA GPU: torch's CPU build")


def test_an_index_that_does_not_answer_is_left_out():
    asked = []
    url, why = torch_index.choose("linux", gpu=lambda: False, probe=lambda u: asked.append(u))
    assert url == "" and "did not answer within 5 s" in why
    assert asked == ["https://download.pytorch.org/whl/cpu/torch/"]


def test_a_gpu_or_another_platform_keeps_the_registry_build_without_probing():
    def probe(url):
        raise AssertionError("no probe needed")

    assert torch_index.choose("linux", gpu=lambda: True, probe=probe)[0] == ""
    for platform in ("darwin", "win32"):
        url, why = torch_index.choose(platform, gpu=lambda: False, probe=probe)
        assert url == "" and "CPU build already" in why


def test_the_gpu_is_seen_through_nvidia_smi_or_the_driver_files():
    assert torch_index.has_nvidia_gpu(lambda n: "/usr/bin/nvidia-smi", lambda p: False)
    assert torch_index.has_nvidia_gpu(lambda n: None, lambda p: p == "/dev/nvidia0")
    assert not torch_index.has_nvidia_gpu(lambda n: None, lambda p: False)


def test_the_probe_is_bounded():
    start = time.monotonic()
    assert not torch_index.reachable("not a url", timeout=0.5)
    assert time.monotonic() - start < 5


def test_it_runs_without_the_venv_and_prints_a_url_or_nothing(repo_root):
    done = subprocess.run(
        [sys.executable, "-I", str(repo_root / "scripts/release/torch_index.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert done.stdout in ("", torch_index.CPU_INDEX + "\n")
    assert done.stderr.startswith("torch index: ")
