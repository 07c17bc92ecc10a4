"""Tests of scripts/release_check.py: one ref, the package version, stamped cells, the tag."""

from __future__ import annotations

import shutil
import subprocess

import pytest

import colab_cell
import release_check

FILES = ("_config.yml", "_toc.yml", "pyproject.toml", "CITATION.cff", "CHANGELOG.md")


@pytest.fixture
def release_tree(tmp_book, repo_root):
    """A scratch book with the repository's release files and one stamped chapter."""
    root = tmp_book({"01_a": ["# 01 · A", {"source": "x = 1", "outputs": ["1\n"]}]})
    for name in FILES:
        if name != "_toc.yml":
            shutil.copy(repo_root / name, root / name)
    assert colab_cell.main([], root=root) == 0
    return root


def test_the_repository_passes(repo_root):
    assert release_check.tree_problems(repo_root) == []


def test_scratch_tree_passes(release_tree, capsys):
    assert release_check.main([], root=release_tree) == 0
    assert "is consistent" in capsys.readouterr().out


def test_ref_must_be_v_plus_the_package_version(release_tree, capsys):
    cfg = release_tree / "_config.yml"
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("branch: v0.1.0", "branch: v0.2.0"))
    assert release_check.main([], root=release_tree) == 1
    err = capsys.readouterr().err
    assert "repository.branch is 'v0.2.0', but pyproject.toml's version is '0.1.0'" in err
    assert "stale: run make colab" in err


def test_stale_cells_and_citation_and_changelog_are_reported(release_tree):
    (release_tree / "CITATION.cff").write_text("cff-version: 1.2.0\nversion: 9\n")
    (release_tree / "CHANGELOG.md").write_text("# Changelog\n")
    nb = release_tree / "book" / "01_a.ipynb"
    nb.write_text(nb.read_text(encoding="utf-8").replace("Open in Colab", "Open"))
    problems = release_check.tree_problems(release_tree)
    assert any("CITATION.cff: version is 9" in p for p in problems)
    assert any("no section '## 0.1.0'" in p for p in problems)
    assert any("01_a.ipynb: Colab set-up cell or badge stale" in p for p in problems)


def fake_git(local, remote):
    def git(args, cwd):
        if args[0] == "tag":
            return local
        if remote is None:
            raise subprocess.CalledProcessError(128, ["git"], stderr="fatal: unable to access")
        return remote

    return git


def test_publishing_needs_the_tag_here_and_there(release_tree, capsys):
    ok = fake_git("v0.1.0\n", "abc123\trefs/tags/v0.1.0\n")
    assert release_check.main(["--publishing"], root=release_tree, git=ok) == 0
    assert "tag present" in capsys.readouterr().out
    problems = release_check.tag_problems(release_tree, fake_git("", ""))
    assert problems[0] == "tag v0.1.0 does not exist in this clone: git tag -a v0.1.0 -m v0.1.0"
    assert problems[1].startswith("tag v0.1.0 is not in https://github.com/")
    offline = release_check.tag_problems(release_tree, fake_git("v0.1.0\n", None))
    assert offline == [
        "git ls-remote https://github.com/pytorch-tricks/pytorch-tricks-executed failed: "
        "fatal: unable to access"
    ]


def test_without_publishing_the_tag_is_not_asked_for(release_tree):
    def git(args, cwd):
        raise AssertionError("git must not run without --publishing")

    assert release_check.main([], root=release_tree, git=git) == 0
