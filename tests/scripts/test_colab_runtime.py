"""scripts/release/colab_runtime.py: GPU-runtime metadata for chapters with a CUDA branch."""

from __future__ import annotations

import json

from scripts.release import colab_runtime


def test_stamps_only_notebooks_with_a_cuda_branch_and_only_once(make_notebook):
    gpu = make_notebook("02_x.ipynb", ["# 02 · X", {"source": "n = torch.cuda.device_count()"}])
    cpu = make_notebook("01_x.ipynb", ["# 01 · X", {"source": "x = 1"}])
    before_cpu = cpu.read_text(encoding="utf-8")
    before_cells = json.loads(gpu.read_text(encoding="utf-8"))["cells"]
    assert colab_runtime.stamp(gpu) is True
    nb = json.loads(gpu.read_text(encoding="utf-8"))
    assert nb["metadata"]["accelerator"] == "GPU"
    assert nb["metadata"]["colab"] == {"gpuType": "T4", "provenance": []}
    assert nb["cells"] == before_cells  # only the metadata changed
    assert colab_runtime.has_gpu_branch(nb) and colab_runtime.has_gpu_runtime(nb)
    assert colab_runtime.stamp(gpu) is False  # already there: not rewritten
    assert colab_runtime.stamp(cpu) is False and cpu.read_text(encoding="utf-8") == before_cpu


def test_markdown_mentions_are_not_a_branch():
    nb = {"cells": [{"cell_type": "markdown", "source": ["if torch.cuda.is_available(): ..."]}]}
    assert not colab_runtime.has_gpu_branch(nb)
    assert not colab_runtime.has_gpu_runtime({"metadata": {"accelerator": "GPU"}})


def test_main_reports_each_notebook(make_notebook, capsys):
    path = make_notebook("03_x.ipynb", ["# 03 · X", {"source": "torch.cuda.is_available()"}])
    assert colab_runtime.main([str(path)]) == 0
    assert capsys.readouterr().out == "03_x.ipynb: GPU runtime metadata added\n"
