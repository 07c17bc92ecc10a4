"""scripts/release/release_check.py: one ref, the package version, stamped cells, the tag."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from scripts.release import colab_cell, release_check

FILES = (
    "_config.yml",
    "_toc.yml",
    "pyproject.toml",
    "CITATION.cff",
    "CHANGELOG.md",
    "tricks_helpers/__init__.py",
)


@pytest.fixture
def release_tree(tmp_book, repo_root):
    """A scratch book with the repository's release files and one stamped chapter."""
    root = tmp_book({"01_a": ["# 01 · A", {"source": "x = 1", "outputs": ["1\n"]}]})
    for name in FILES:
        if name != "_toc.yml":
            (root / name).parent.mkdir(parents=True, exist_ok=True)
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
    assert (
        "repository.branch is 'v0.2.0', but the package version (tricks_helpers.__version__) "
        "is '0.1.0'" in err
    )
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


def test_the_version_is_typed_once_and_pyproject_reads_it(repo_root):
    import tomllib

    with open(repo_root / "pyproject.toml", "rb") as f:
        data = tomllib.load(f)
    assert "version" not in data["project"] and "version" in data["project"]["dynamic"]
    assert data["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "tricks_helpers.__version__"
    }
    import tricks_helpers

    assert release_check.package_version(repo_root) == tricks_helpers.__version__


def test_a_version_typed_in_pyproject_is_a_problem(release_tree):
    py = release_tree / "pyproject.toml"
    text = py.read_text(encoding="utf-8")
    py.write_text(text.replace('dynamic = ["version"]', 'version = "0.1.0"'))
    problems = release_check.tree_problems(release_tree)
    assert any("project.version is typed ('0.1.0')" in p for p in problems)
    assert any('dynamic = ["version"]' in p for p in problems)


def test_the_version_is_changed_in_one_place_and_the_others_are_caught(release_tree):
    init = release_tree / "tricks_helpers" / "__init__.py"
    init.write_text(init.read_text(encoding="utf-8").replace('"0.1.0"', '"0.2.0"'))
    problems = release_check.tree_problems(release_tree)
    assert any("repository.branch is 'v0.1.0'" in p for p in problems)
    assert any("CITATION.cff: version is '0.1.0', expected '0.2.0'" in p for p in problems)
    assert any("no section '## 0.2.0'" in p for p in problems)
    init.write_text("x = 1\n")
    with pytest.raises(ValueError, match="no __version__"):
        release_check.package_version(release_tree)
    assert release_check.tree_problems(release_tree) == [
        'tricks_helpers/__init__.py: no __version__ = "<version>" line'
    ]


def test_the_pushed_tag_must_be_v_plus_the_version(release_tree, capsys):
    assert release_check.main(["--tag", "v0.1.0"], root=release_tree) == 0
    assert "pushed tag v0.1.0" in capsys.readouterr().out
    assert release_check.main(["--tag", "refs/tags/v0.1.0"], root=release_tree) == 0
    capsys.readouterr()
    assert release_check.main(["--tag", "v0.1.1"], root=release_tree) == 1
    err = capsys.readouterr().err
    assert "the pushed tag is 'v0.1.1', but the package version" in err
    assert "is '0.1.0': tag v0.1.0, or set the version to '0.1.1'" in err
    assert release_check.tag_name_problems("0.1.0", release_tree) != []
