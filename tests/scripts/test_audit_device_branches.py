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


# --- rule same-text-every-device (issue 41): the three cells a first GPU run would fail -------
DEVICE_CELL = code('device = "cuda" if torch.cuda.is_available() else "cpu"')
PIN_LINE_03 = (  # 03's recipe check: the stream name in a compared line, outside any `if`
    "got = list(Prefetcher(loader, device))\n"
    "print(\n"
    '    f"{len(got)} batches identical through both prefetchers "\n'
    "    f\"({device}: {'side-stream copies' if device == 'cuda' else 'passed through'})\"\n"
    ")\n"
)
PREFETCH_CLAIM_03 = (  # 03's claims cell: a counted claim on the GPU side, the table after it
    "if torch.cuda.is_available():\n"
    "    book.add(\n"
    "        claims.from_count(\n"
    '            "cuda-prefetcher",\n'
    '            "copy the next batch on a second CUDA stream",\n'
    "            prefetch_counts[0] == prefetch_counts[1] > 0,\n"
    '            "copies issued beside the compute stream: {} of {}".format(*prefetch_counts),\n'
    '            condition="a CUDA GPU",\n'
    "        )\n"
    "    )\n"
    "else:\n"
    '    book.add(claims.not_decided("cuda-prefetcher", "copy", condition="a CUDA GPU", '
    'missing="no CUDA device"))\n'
    "print(book.table())\n"
)
RECORD_COUNT_03 = (  # the same claim declared beside its evidence with Claims.record + Count
    "if torch.cuda.is_available():\n"
    "    book.record(\n"
    '        "cuda-prefetcher",\n'
    '        "copy the next batch on a second CUDA stream",\n'
    "        claims.Count(prefetch_counts[0] > 0, f'copies: {prefetch_counts[0]}'),\n"
    '        condition="a CUDA GPU",\n'
    "    )\n"
    "else:\n"
    '    book.record("cuda-prefetcher", "copy", claims.Absent("no CUDA"), condition="a CUDA GPU")\n'
)
COPIES_WHY_10 = (  # 10's copy count (1 on a GPU, 0 on a CPU) in the why of a tabled verdict
    'copies_base = counting.aten_op_counts(lambda: torch.randn(n).to(device))["aten._to_copy"]\n'
    "print(f'[hardware] on {device}: {copies_base} copies')\n"
    "cmp_create = bench.compare(\n"
    "    'randn on device vs .to()', f, g, device=device,\n"
    '    why=f"copies: {copies_base} vs 0 of {n * 4:,} B",\n'
    ")\n"
)


def same_text(make_notebook, cells):
    return [p for p in audit(make_notebook, cells).problems if "same-text-every-device" in p]


@pytest.mark.parametrize(
    "source, found",
    [
        (PIN_LINE_03, "cell 2: line 2 prints text that depends on the device"),
        (PREFETCH_CLAIM_03, "cell 2: a counted claim at line 3 is made on one side of a branch"),
        (COPIES_WHY_10, "cell 2: the why text at line 5 is built from a value that depends on"),
        (RECORD_COUNT_03, "cell 2: a counted claim at line 5 is made on one side of a branch"),
    ],
)
def test_same_text_every_device_finds_the_three_predicted_gpu_failures(
    make_notebook, source, found
):
    problems = same_text(make_notebook, [DEVICE_CELL, code(source)])
    assert len(problems) == 1 and problems[0].startswith(found), problems
    # the old rule looked only at what each side of an `if` prints: it passed all three
    old = audit_device_branches.device_branch_problems(2, source, {"device"})
    assert old == []


@pytest.mark.parametrize(
    "source",
    [
        # the fixes: the device on a [hardware] line, a GPU-only fact as a measured claim, a
        # why that says what holds on each device
        "print(f'{len(got)} batches identical')\n"
        "print(f\"[hardware] {device}: {'side-stream copies' if device == 'cuda' else 'none'}\")",
        PREFETCH_CLAIM_03.replace("claims.from_count(", "claims.Claim(").replace(
            '            condition="a CUDA GPU",\n', '            "a GPU", measured=True,\n'
        ),
        COPIES_WHY_10.replace("{copies_base} vs 0", "1 vs 0 on a GPU, 0 vs 0 on a CPU"),
        RECORD_COUNT_03.replace("claims.Count(", "claims.Trend("),  # measured: not compared
        # a comparison the cell asserts prints the same bool everywhere
        "print(f'backend as expected: {backends == {expected}}')\nassert backends == {expected}",
        "print('[hardware]', env.hardware_line(device))",
        # a name bound again from something else is no longer the device's
        "c = count(lambda: x.to(device))\nc = 3\nr = bench.compare('x', f, g, device=device, "
        "why=f'{c}')",
    ],
)
def test_same_text_every_device_passes_the_fixes(make_notebook, source):
    assert same_text(make_notebook, [DEVICE_CELL, code("expected = 'gloo'"), code(source)]) == []


def test_same_text_every_device_follows_values_across_cells_and_skips_ignored(make_notebook):
    count = code("copies = count(lambda: torch.ones(3).to(device))", tags=["nbval-ignore-output"])
    why = code("r = bench.compare('x', f, g, device='cpu', why=f'{copies} copies')")
    problems = same_text(make_notebook, [DEVICE_CELL, count, why])
    assert [p.split(":")[0] for p in problems] == ["cell 3"]
    ignored = code(PIN_LINE_03, tags=["nbval-ignore-output"])
    assert same_text(make_notebook, [DEVICE_CELL, ignored]) == []


def test_the_audits_read_cells_with_continuation_lines(make_notebook):
    # a line starting with `!=` or `%` inside brackets is Python, not a shell or magic line:
    # the cell used to be read as "not Python" and every rule skipped it
    for continued in ("    != 'cpu'", "    % 2"):
        source = (
            "print(\n"
            f"    f\"{{device}}: {{'yes' if device == 'cuda' else 'no'}}\", device\n"
            f"{continued}\n"
            ")\n"
        )
        problems = same_text(make_notebook, [DEVICE_CELL, code(source)])
        assert [p.split(":")[0] for p in problems] == ["cell 2"], (continued, problems)
