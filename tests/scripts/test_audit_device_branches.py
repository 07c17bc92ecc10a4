"""Tests of scripts/audits/device_branches.py through the notebook audit: a compared cell that
branches on the device prints the same lines on both sides (rule one-output-per-device)."""

from __future__ import annotations

import pytest

from scripts.audits import device_branches as audit_device_branches
from scripts.audits import notebooks as audit_notebooks

TITLE = "# 01 · X\n\n```{admonition} Do this\n:class: tip\nDo the thing.\n```\n"


def audit(make_notebook, cells):
    """The audit of scratch cells under a title, without a whole chapter's rules."""
    notebook = make_notebook("01_x.ipynb", [TITLE] + cells)
    return audit_notebooks.audit_notebook(notebook, chapter_rules=False)


def code(source, outputs=("1\n",), **kw):
    return {"source": source, "outputs": list(outputs), **kw}


ONE_LINE_EACH = (
    "if torch.cuda.is_available():\n"
    "    print(f'[hardware] {t:.1f} ms on the GPU')\n"
    "    assert t > 0\n"
    "else:\n"
    "    print('[hardware] no CUDA device: ' 'not measured')\n"
)


@pytest.mark.parametrize(
    "source, counts",
    [
        (  # issue 33, 06 c58: two [hardware] lines on a GPU, one on a CPU
            "if torch.cuda.is_available():\n    print(f'[hardware] {a}')\n"
            "    print(f'[hardware] {b}')\nelse:\n    print('[hardware] no CUDA')",
            "2 and 1",
        ),
        ("if env.has_cuda:\n    print('[hardware] GPU')", "1 and 0"),
        (
            "gpus = torch.cuda.device_count()\nif gpus:\n"
            "    for g in range(gpus):\n        print(f'[hardware] GPU {g}')\n"
            "else:\n    print('[hardware] none')",
            "an unknown number and 1",
        ),
        (
            "if x.device.type == 'cuda':\n    if big:\n        print('[hardware] big')\n"
            "else:\n    print('[hardware] cpu')",
            "an unknown number and 1",
        ),
    ],
)
def test_one_output_per_device_counts_lines(make_notebook, source, counts):
    a = audit(make_notebook, [code(source)])
    problems = [p for p in a.problems if "one-output-per-device" in p]
    assert len(problems) == 1 and problems[0].startswith("cell 1: the branch on `")
    assert problems[0].endswith(
        f"prints {counts} line(s) on its two sides in a compared cell (rule one-output-per-device)"
    )


@pytest.mark.parametrize(
    "source, line",
    [
        ("if torch.cuda.is_available():\n    print('GPU: yes')\nelse:\n    print('GPU: no')", 2),
        (
            "if DEVICE == 'cuda':\n    print('[hardware] a\\nb')\nelse:\n    print('[hardware] c')",
            2,
        ),
        ("if torch.cuda.is_available():\n    c = bench.compare('x', f, g, device='cuda')", 2),
        ("if torch.cuda.is_available():\n    print('[hardware]', t)\nelse:\n    print('x')", 2),
        ("if has_gpu:\n    x = 1\nelse:\n    notebook.show_error(f, ValueError)", 4),
    ],
)
def test_one_output_per_device_wants_hardware_lines(make_notebook, source, line):
    problems = [
        p for p in audit(make_notebook, [code(source)]).problems if "[hardware] ` line" in p
    ]
    assert len(problems) == 1 and f"(line {line}) in a compared cell" in problems[0]
    assert "rule one-output-per-device: tag the cell nbval-ignore-output" in problems[0]


@pytest.mark.parametrize(
    "source",
    [
        ONE_LINE_EACH,
        "if torch.cuda.is_available():\n    torch.cuda.init()\nx = 1",  # prints nothing
        "if torch.cuda.is_available():\n    c = bench.compare('x', f, g, device='cuda', "
        "show=False)\n    print(f'[hardware] {c.line()}')\nelse:\n    print('[hardware] no')",
        "if big:\n    print('large')\nelse:\n    print('small')\n    print('twice')",
        "if torch.cuda.is_available():\n    def f():\n        print('x')\n",  # not run here
    ],
)
def test_one_output_per_device_passes_same_shape_and_other_branches(make_notebook, source):
    problems = audit(make_notebook, [code(source)]).problems
    assert [p for p in problems if "one-output-per-device" in p or "[hardware]" in p] == []


def test_one_output_per_device_skips_ignored_cells_and_follows_names(make_notebook):
    two_lines = "if n > 0:\n    print('[hardware] a')\n    print('[hardware] b')\n"
    a = audit(
        make_notebook,
        [
            code(
                two_lines.replace("n > 0", "torch.cuda.is_available()"),
                tags=["nbval-ignore-output"],
            ),
            code(two_lines),  # n is not (yet) a device fact
            code("n = torch.cuda.device_count()"),
            code(two_lines),
            code("if torch.cuda.is_available():\n    print('x')", tags=["nbval-skip"]),
        ],
    )
    assert [p.split(":")[0] for p in a.problems if "one-output-per-device" in p] == ["cell 4"]
    assert audit_device_branches.device_names(
        "a, b = torch.cuda.device_count(), 2\nc: int = 3"
    ) == {
        "a",
        "b",
    }
    assert audit_device_branches.device_names("def (:") == set()
    assert audit_device_branches.device_branch_problems(1, "def (:") == []
