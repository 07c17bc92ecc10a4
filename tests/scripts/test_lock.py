"""Tests of scripts/release/lock.py and constraints.txt: the whole environment pinned, agreeing with
requirements.txt."""

from __future__ import annotations

import pytest

from scripts.release import lock

FREEZE = """\
Sphinx==8.2.3
torch==2.13.0+cpu
tricks_helpers==0.1.0
jupyter_book==1.0.4.post1
# Editable install with no version control (tricks_helpers==0.1.0)
"""


def test_lock_lines_pin_everything_but_the_package_without_local_labels():
    assert lock.lock_lines(FREEZE) == [
        "jupyter_book==1.0.4.post1",
        "Sphinx==8.2.3",
        "torch==2.13.0",
    ]


@pytest.mark.parametrize(
    "text, error, match",
    [
        (b"x==1", TypeError, "freeze must be a str"),
        ("pkg @ file:///tmp/pkg\n", ValueError, "cannot lock 'pkg @ file:///tmp/pkg'"),
        ("-e git+https://h/x#egg=x\n", ValueError, "not a name==version pin"),
    ],
)
def test_lock_lines_refuse_what_cannot_be_locked(text, error, match):
    with pytest.raises(error, match=match):
        lock.lock_lines(text)


def test_every_requirements_pin_agrees_with_the_constraints(repo_root):
    required = lock.read_pins(repo_root / "requirements.txt")
    locked = lock.read_pins(repo_root / "constraints.txt")
    assert required, "requirements.txt pins nothing"
    for name, version in required.items():
        assert locked.get(name) == version, (
            f"{name}: requirements {version}, lock {locked.get(name)}"
        )


def test_constraints_lock_the_whole_environment(repo_root):
    text = (repo_root / "constraints.txt").read_text(encoding="utf-8")
    assert text.startswith(lock.HEADER)
    locked = lock.read_pins(repo_root / "constraints.txt")
    for name in ("sphinx", "sphinx-book-theme", "myst-nb", "docutils"):
        assert name in locked, f"{name} floats: make lock"
    assert lock.canonical(lock.OWN_PACKAGE) not in locked
    assert "+" not in text, "local version labels are dropped"


def test_makefile_installs_under_the_constraints_and_has_make_lock(repo_root):
    makefile = (repo_root / "Makefile").read_text(encoding="utf-8")
    assert "-r requirements.txt -c $(CONSTRAINTS)" in makefile
    assert (
        "\tlock: venv" not in makefile
        and "lock: venv\n\t$(BIN)/python -m scripts.release.lock" in makefile
    )
