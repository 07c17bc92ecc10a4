"""Tests of scripts/release/colab_cell.py: the Colab set-up cell, from one configured place."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import shutil
import subprocess
import sys

import nbformat
import pytest
from packaging.specifiers import SpecifierSet

from scripts.release import colab_cell


def config(tmp_path, text):
    cfg = tmp_path / "_config.yml"
    cfg.write_text(text, encoding="utf-8")
    return cfg


def run_cell(source, monkeypatch, *, installed=False, torch_version="2.13.0+cpu", pip=None):
    """Execute the cell's source in-process with the package missing and pip faked."""
    calls = []
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args):
        if name == "tricks_helpers":
            return real_find_spec(name) if installed else None
        return real_find_spec(name, *args)

    def version(name):
        if name == "torch" and torch_version is not None:
            return torch_version
        raise importlib.metadata.PackageNotFoundError(name)

    def run(cmd, **kwargs):
        calls.append(cmd)
        return pip or subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(importlib.metadata, "version", version)
    monkeypatch.setattr(subprocess, "run", run)
    exec(compile(source, "colab-cell", "exec"), {"__name__": "__main__"})
    return calls


def test_source_comes_from_config(tmp_path):
    src = colab_cell.cell_source(
        config(tmp_path, "repository:\n  url: https://example.org/me/book/\n  branch: v1.2.3\n")
    )
    assert 'REPO = "https://example.org/me/book"' in src
    assert 'RELEASE = "v1.2.3"' in src
    assert "@{RELEASE}" in src and "@main" not in src, "installs the tag, not a branch"
    compile(src, "cell", "exec")
    assert max(len(line) for line in src.splitlines()) < 100


@pytest.mark.skipif(
    shutil.which("ruff") is None and not (importlib.util.find_spec("ruff")),
    reason="ruff is not installed",
)
def test_source_is_ruff_clean(tmp_path, repo_root):
    """The stamped cell survives `ruff format` and `ruff check` unchanged (make lint)."""
    src = colab_cell.cell_source() + "\n"
    ruff = [sys.executable, "-m", "ruff"]
    fmt = subprocess.run(
        [*ruff, "format", "--stdin-filename", "cell.py", "-"],
        input=src,
        capture_output=True,
        text=True,
        cwd=repo_root,
    )
    assert fmt.returncode == 0 and fmt.stdout == src, fmt.stderr or "ruff format changes the cell"
    chk = subprocess.run(
        [*ruff, "check", "--stdin-filename", "cell.py", "-"],
        input=src,
        capture_output=True,
        text=True,
        cwd=repo_root,
    )
    assert chk.returncode == 0, chk.stdout


@pytest.mark.parametrize(
    "text, match",
    [
        ("title: x\n", "repository.url must be an https URL"),
        (
            "repository:\n  url: git@host:me/book\n  branch: v1\n",
            "repository.url must be an https",
        ),
        ("repository:\n  url: https://h/me/book\n", "repository.branch must be a release tag"),
        ("repository:\n  url: https://h/me/book\n  branch: 'v1; rm -rf'\n", "release tag"),
        (
            "repository:\n  url: https://h/me/book\n  branch: v1\n  release: v1\n",
            "repository.release is retired; the one ref is repository.branch",
        ),
    ],
)
def test_bad_config_is_refused(tmp_path, text, match):
    with pytest.raises(ValueError, match=re.escape(match)):
        colab_cell.cell_source(config(tmp_path, text))


def test_stamp_inserts_a_hidden_cell_once_before_the_first_code_cell_then_updates():
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# T"), nbformat.v4.new_code_cell("x = 1")]
    )
    assert colab_cell.stamp(nb, "print('a')") is True
    assert [c.source for c in nb.cells] == ["# T", "print('a')", "x = 1"]
    assert nb.cells[1].metadata["tags"] == ["colab-setup", "remove-cell"]
    assert colab_cell.stamp(nb, "print('a')") is False
    assert colab_cell.stamp(nb, "print('b')") is True
    assert [c.source for c in nb.cells] == ["# T", "print('b')", "x = 1"]


def test_stamp_hides_an_existing_cell_and_keeps_its_outputs():
    cell = nbformat.v4.new_code_cell("old", metadata={"tags": ["colab-setup"]})
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="kept\n")]
    cell.execution_count = 1
    nb = nbformat.v4.new_notebook(cells=[cell])
    assert colab_cell.stamp(nb, "new") is True
    assert nb.cells[0].metadata["tags"] == ["colab-setup", "remove-cell"]
    assert nb.cells[0].outputs[0].text == "kept\n" and nb.cells[0].execution_count == 1
    assert colab_cell.stamp(nb, "new") is False


def test_cell_installs_nothing_where_the_package_is_present():
    out = subprocess.run(
        [sys.executable, "-c", colab_cell.cell_source()], capture_output=True, text=True, check=True
    ).stdout
    assert out == colab_cell.LOCAL_LINE + "\n"


def test_cell_installs_the_release_with_a_bounded_torchao(monkeypatch, capsys):
    calls = run_cell(colab_cell.cell_source(), monkeypatch, torch_version="2.13.0+cu126")
    (cmd,) = calls
    url, release = colab_cell.read_config()
    assert cmd[:4] == [sys.executable, "-m", "pip", "install"]
    assert f"tricks_helpers[book] @ git+{url}@{release}" in cmd
    assert colab_cell.TORCHAO_FOR_TORCH["2.13"] in cmd
    assert "torch" not in [c.split("=")[0].split(">")[0] for c in cmd], "never reinstalls torch"
    assert capsys.readouterr().out == (
        f"installed tricks_helpers {release} from {url}; torch 2.13.0+cu126 kept\n"
    )


def test_cell_says_when_no_torchao_is_known_for_this_torch(monkeypatch, capsys):
    calls = run_cell(colab_cell.cell_source(), monkeypatch, torch_version="2.3.1")
    assert not any(c.startswith("torchao") for c in calls[0])
    assert "no torchao release is known to work with torch 2.3.1" in capsys.readouterr().out


def test_cell_failure_says_what_failed_and_what_to_do(monkeypatch):
    stderr = (
        "  error: subprocess-exited-with-error\n  fatal: unable to access "
        "'https://h/': Could not resolve host: h\nnote: This error originates from a "
        "subprocess, and is likely not a problem with pip.\n"
    )
    failed = subprocess.CompletedProcess([], 1, "", stderr)
    with pytest.raises(RuntimeError) as info:
        run_cell(colab_cell.cell_source(), monkeypatch, pip=failed)
    message = str(info.value)
    assert message.startswith("Could not install the book's helpers (release ")
    assert "pip said: fatal: unable to access 'https://h/': Could not resolve host: h" in message
    assert "What to do:" in message and "pip install 'tricks_helpers[book] @ git+" in message
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_cell_failure_with_a_missing_tag_shows_gits_reason(monkeypatch):
    """pip's last lines say only "See above for output."; the cell shows git's line instead."""
    from test_pip_reason import MISSING_TAG

    failed = subprocess.CompletedProcess([], 1, "", MISSING_TAG)
    with pytest.raises(RuntimeError) as info:
        run_cell(colab_cell.cell_source(), monkeypatch, pip=failed)
    message = str(info.value)
    assert "pip said: error: pathspec 'v0.1.0' did not match any file(s) known to git" in message
    assert "See above" not in message


def test_cell_carries_pip_reason_verbatim():
    import inspect

    from scripts.release.pip_reason import pip_reason

    assert inspect.getsource(pip_reason).rstrip() in colab_cell.cell_source()


def test_colab_url_is_the_launch_buttons_url(tmp_path):
    """sphinx-book-theme: <colab_url>/github/<org>/<repo>/blob/<branch>/<path_to_docs><page>."""
    cfg = config(
        tmp_path,
        "repository:\n  url: https://github.com/me/book\n  branch: v2.0.0\n"
        "  path_to_book: docs\nlaunch_buttons:\n  colab_url: https://colab.example.org/\n",
    )
    assert colab_cell.colab_url(cfg, "book/01_a.ipynb") == (
        "https://colab.example.org/github/me/book/blob/v2.0.0/docs/book/01_a.ipynb"
    )
    assert colab_cell.badge_source(cfg, "book/01_a.ipynb") == (
        f"[![Open in Colab]({colab_cell.BADGE_IMAGE})]"
        "(https://colab.example.org/github/me/book/blob/v2.0.0/docs/book/01_a.ipynb)"
    )
    gitlab = config(tmp_path, "repository:\n  url: https://gitlab.com/me/book\n  branch: v1\n")
    with pytest.raises(ValueError, match="Colab opens GitHub repositories only"):
        colab_cell.colab_url(gitlab, "book/01_a.ipynb")


def test_stamp_badge_puts_one_hidden_badge_first_and_updates_it():
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# T"), nbformat.v4.new_code_cell("x = 1")]
    )
    assert colab_cell.stamp_badge(nb, "[badge a](u)") is True
    assert [c.source for c in nb.cells] == ["[badge a](u)", "# T", "x = 1"]
    assert nb.cells[0].metadata["tags"] == ["colab-badge", "remove-cell"]
    assert colab_cell.stamp_badge(nb, "[badge a](u)") is False
    nb.cells.append(nb.cells.pop(0))  # moved away: put back first, once
    assert colab_cell.stamp_badge(nb, "[badge b](u)") is True
    assert [c.source for c in nb.cells] == ["[badge b](u)", "# T", "x = 1"]


def test_every_chapter_has_its_badge_first(repo_root):
    cfg = repo_root / "_config.yml"
    url, ref = colab_cell.read_config(cfg)
    for path in colab_cell.chapter_notebooks(repo_root):
        nb = nbformat.read(path, as_version=4)
        first = nb.cells[0]
        rel = path.relative_to(repo_root).as_posix()
        assert first.cell_type == "markdown" and first.source == colab_cell.badge_source(cfg, rel)
        assert f"/blob/{ref}/{rel})" in first.source, f"{path.name}: badge not at the ref"
        assert colab_cell.HIDE_TAG in first.metadata["tags"], f"{path.name}: badge on the site"


def test_torchao_table_holds_the_pinned_pair(repo_root):
    """requirements.txt's torch and torchao pins are a row of the table the cell uses."""
    pins = dict(
        re.findall(
            r"^([a-zA-Z0-9_.-]+)==(\S+)",
            (repo_root / "requirements.txt").read_text(encoding="utf-8"),
            flags=re.M,
        )
    )
    minor = ".".join(pins["torch"].split(".")[:2])
    spec = colab_cell.TORCHAO_FOR_TORCH[minor].removeprefix("torchao")
    assert pins["torchao"] in SpecifierSet(spec)


def test_every_chapter_has_the_current_hidden_cell_first(repo_root):
    paths = colab_cell.chapter_notebooks(repo_root)
    assert paths, "no chapter notebooks found"
    source = colab_cell.cell_source()
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        tags = first.metadata.get("tags", [])
        assert colab_cell.TAG in tags, f"{path.name}: no set-up cell first"
        assert colab_cell.HIDE_TAG in tags, f"{path.name}: set-up cell not hidden (make colab)"
        assert first.source == source, f"{path.name}: stale set-up cell (make colab)"
        outputs = "".join(o.get("text", "") for o in first.outputs)
        assert outputs == colab_cell.LOCAL_LINE + "\n", f"{path.name}: re-execute it"


def test_main_stamps_then_checks_clean(tmp_book, capsys):
    root = tmp_book({"01_a": ["# 01 · A", {"source": "x = 1", "outputs": ["1\n"]}]})
    assert colab_cell.main(["--check"], root=root) == 1
    assert colab_cell.main([], root=root) == 0
    assert colab_cell.main(["--check"], root=root) == 0
    nb = nbformat.read(root / "book" / "01_a.ipynb", as_version=4)
    assert nb.cells[0].source == colab_cell.badge_source(root / "_config.yml", "book/01_a.ipynb")
    assert "up to date" in capsys.readouterr().out
