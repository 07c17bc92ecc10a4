"""Check that a release is consistent before (and, with ``--publishing``, when) it is tagged.

    python -m scripts.release.release_check                 the tree agrees with itself
                                                            (make release-check)
    python -m scripts.release.release_check --tag v0.1.0    ... and the pushed tag is ``v`` +
                                                            the version (the workflows pass
                                                            ``$GITHUB_REF_NAME``)
    python -m scripts.release.release_check --publishing    ... and the release tag exists,
                                                            here and at repository.url (what
                                                            Colab installs from)

The version has one source, ``__version__`` in ``tricks_helpers/__init__.py``: ``pyproject.toml``
reads it (``dynamic = ["version"]``, setuptools' ``attr:``). Everything else that names the
version is compared with it here (one problem per line on stderr, exit 1 if any):

- ``pyproject.toml`` types no version of its own and reads it from ``__version__``;
- the one ref, ``repository.branch`` in ``_config.yml`` (Colab launch buttons, badges and the
  set-up cell all use it), is ``v`` + the version;
- ``CITATION.cff``'s ``version`` is the package version, and ``CHANGELOG.md`` has a section
  ``## <version>``;
- every chapter's Colab set-up cell and badge are what ``scripts/release/colab_cell.py`` stamps now;
- with ``--publishing`` only: the tag exists in this clone (``git tag -l``) and in the
  repository (``git ls-remote --tags <repository.url>``).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import nbformat
import yaml

from scripts.book.find_notebooks import ROOT, chapter_notebooks
from scripts.release import colab_cell

#: Runs a git command, returns its stdout (raises CalledProcessError / OSError on failure).
GitRunner = Callable[[list[str], Path], str]


#: The one place the version is typed, and the name pyproject.toml reads it from.
VERSION_FILE = Path("tricks_helpers") / "__init__.py"
VERSION_ATTR = "tricks_helpers.__version__"


def package_version(root: Path = ROOT) -> str:
    """``__version__`` of ``tricks_helpers/__init__.py``, read without importing the package.

    Raises:
        ValueError: the file assigns no string ``__version__``.
    """
    tree = ast.parse((root / VERSION_FILE).read_text(encoding="utf-8"))
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["__version__"]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise ValueError(f'{VERSION_FILE.as_posix()}: no __version__ = "<version>" line')


def pyproject_problems(root: Path = ROOT) -> list[str]:
    """``pyproject.toml`` must read the version from ``__version__``, not type its own."""
    with open(root / "pyproject.toml", "rb") as f:
        data = tomllib.load(f)
    problems = []
    if "version" in data.get("project", {}):
        problems.append(
            f"pyproject.toml: project.version is typed ({data['project']['version']!r}); "
            f"the version's one source is {VERSION_ATTR}: remove it"
        )
    dynamic = data.get("project", {}).get("dynamic", [])
    attr = data.get("tool", {}).get("setuptools", {}).get("dynamic", {}).get("version", {})
    if "version" not in dynamic or attr != {"attr": VERSION_ATTR}:
        problems.append(
            'pyproject.toml: the version must be dynamic = ["version"] with '
            f'[tool.setuptools.dynamic] version = {{attr = "{VERSION_ATTR}"}}'
        )
    return problems


def tag_name_problems(tag: str, root: Path = ROOT) -> list[str]:
    """Whether a pushed tag (``$GITHUB_REF_NAME``) is ``v`` + the package version.

    Args:
        tag: the tag's name, e.g. ``v0.1.0`` (``refs/tags/`` in front is accepted).
        root: the repository's root.

    Returns:
        One sentence if the tag and the version disagree; empty when they agree.
    """
    name = tag.removeprefix("refs/tags/")
    version = package_version(root)
    if name != f"v{version}":
        return [
            f"the pushed tag is {name!r}, but the package version ({VERSION_ATTR}) is "
            f"{version!r}: tag v{version}, or set the version to {name.removeprefix('v')!r}"
        ]
    return []


def tree_problems(root: Path = ROOT) -> list[str]:
    """What disagrees in the tree (pyproject, ref, citation, changelog, stamped cells).

    Returns:
        One sentence per problem; empty when the tree is consistent.
    """
    try:
        version = package_version(root)
    except ValueError as exc:
        return [str(exc)]
    problems = pyproject_problems(root)
    config = root / "_config.yml"
    try:
        _, ref = colab_cell.read_config(config)
    except ValueError as exc:
        return [str(exc)]
    if ref != f"v{version}":
        problems.append(
            f"_config.yml: repository.branch is {ref!r}, but the package version "
            f"({VERSION_ATTR}) is {version!r}: set repository.branch: v{version} and run make colab"
        )
    cff = yaml.safe_load((root / "CITATION.cff").read_text(encoding="utf-8")) or {}
    if str(cff.get("version")) != version:
        problems.append(f"CITATION.cff: version is {cff.get('version')!r}, expected {version!r}")
    changelog = (root / "CHANGELOG.md").read_text(encoding="utf-8")
    if not re.search(rf"^## {re.escape(version)}\b", changelog, flags=re.M):
        problems.append(f"CHANGELOG.md: no section '## {version}'")
    source = colab_cell.cell_source(config)
    for path in chapter_notebooks(root):
        nb = nbformat.read(path, as_version=4)
        badge = colab_cell.badge_source(config, path.relative_to(root).as_posix())
        if colab_cell.stamp_badge(nb, badge) or colab_cell.stamp(nb, source):
            problems.append(f"{path.name}: Colab set-up cell or badge stale: run make colab")
    return problems


def _git(args: list[str], cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def tag_problems(root: Path = ROOT, git: GitRunner = _git) -> list[str]:
    """Whether the release tag exists in this clone and in ``repository.url``.

    Args:
        root: the repository's root.
        git: runs ``git <args>`` in a directory and returns its stdout (replaced in tests).

    Returns:
        One sentence per problem; empty when the tag exists in both places.
    """
    url, ref = colab_cell.read_config(root / "_config.yml")
    problems = []
    try:
        local = git(["tag", "-l", ref], root).split()
    except (subprocess.CalledProcessError, OSError) as exc:
        local = []
        problems.append(f"git tag -l {ref} failed: {exc}")
    if ref not in local:
        problems.append(f"tag {ref} does not exist in this clone: git tag -a {ref} -m {ref}")
    try:
        remote = git(["ls-remote", "--tags", url, f"refs/tags/{ref}"], root)
    except (subprocess.CalledProcessError, OSError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        return [*problems, f"git ls-remote {url} failed: {detail.strip()}"]
    if f"refs/tags/{ref}" not in remote:
        problems.append(f"tag {ref} is not in {url}: git push origin {ref}")
    return problems


def main(argv: list[str] | None = None, root: Path = ROOT, git: GitRunner = _git) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--publishing", action="store_true", help="also require the tag, here and at the url"
    )
    parser.add_argument(
        "--tag", help="the pushed tag (e.g. $GITHUB_REF_NAME): it must be v + the version"
    )
    args = parser.parse_args(argv)
    problems = tree_problems(root)
    if args.tag is not None:
        problems += tag_name_problems(args.tag, root)
    if args.publishing:
        problems += tag_problems(root, git)
    for problem in problems:
        print(f"release-check: {problem}", file=sys.stderr)
    if problems:
        return 1
    _, ref = colab_cell.read_config(root / "_config.yml")
    extra = ", tag present here and at the repository" if args.publishing else ""
    if args.tag is not None:
        extra += f", pushed tag {args.tag.removeprefix('refs/tags/')}"
    print(f"release-check: {ref} is consistent (version, citation, changelog, Colab cells{extra})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
