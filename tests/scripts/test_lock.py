"""Tests of scripts/release/lock.py and constraints.txt: the whole environment pinned, agreeing with
requirements.txt."""

from __future__ import annotations

import os
import re
from pathlib import Path

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


def test_torch_is_installed_hash_checked_against_the_lock(repo_root):
    """Issue 43: torch was installed by its pin alone (no hash checked). Now the wheel pip
    chooses is downloaded, then installed from that folder alone under the hashed lock."""
    makefile = (repo_root / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^\$\(STAMP\):.*\n((?:\t.*\n)+)", makefile, flags=re.M).group(1)
    steps = [line.strip() for line in recipe.replace("\\\n", " ").splitlines()]
    torch_steps = [s for s in steps if '"torch==$(PINNED_TORCH)"' in s]
    download, install = torch_steps
    assert "pip download" in download and "-c $(VENV)/pins.txt" in download
    assert "-d $(VENV)/torch-wheel" in download
    assert "--no-index --find-links $(VENV)/torch-wheel" in install
    assert install.endswith("-c $(CONSTRAINTS)")  # the hashed lock: a wheel it lacks stops it
    rest = [s for s in steps if "-r requirements.txt -c $(CONSTRAINTS)" in s]
    assert steps.index(download) < steps.index(install) < steps.index(rest[0])
    assert "$(foreach w,$(LOCK_WHEELS),--hash-file $(w))" in makefile  # local wheels locked


def test_the_local_torch_wheel_of_this_machine_is_in_the_lock(repo_root):
    """Where pip's local folders hold the pinned torch's wheel, the lock has its hash."""
    pins = lock.read_pins(repo_root / "constraints.txt")
    entries = lock.parse_lock((repo_root / "constraints.txt").read_text(encoding="utf-8"))
    wheels = [
        w
        for d in os.environ.get("PIP_FIND_LINKS", "").split()
        for w in sorted(Path(d).glob(f"torch-{pins['torch']}*.whl"))
    ]
    if not wheels:
        pytest.skip("no local torch wheel here")
    for wheel in wheels:
        assert lock.file_hash(wheel) in entries["torch"][2], f"{wheel.name}: make lock"


PAGE = b"""<html><body>
<a href="https://files.example/p/tqdm-4.70.1-py3-none-any.whl#sha256=aaa1">w</a>
<a href="https://files.example/p/tqdm-4.70.1.tar.gz#sha256=aaa2">s</a>
<a href="https://files.example/p/tqdm-4.70.0-py3-none-any.whl#sha256=bbb">older</a>
<a href="https://files.example/p/tqdm_extra-4.70.1-py3-none-any.whl#sha256=ccc">other</a>
</body></html>"""
CPU_PAGE = b"""
<a href="/whl/cpu/torch-2.13.0%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=ddd">t</a>
<a href="/whl/cpu/torch-2.12.0%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=eee">t</a>
"""


def fake_fetch(pages):
    def fetch(url):
        return pages[url]

    return fetch


def test_index_hashes_take_every_file_of_the_release_and_nothing_else():
    fetch = fake_fetch({"https://pypi.org/simple/tqdm/": PAGE})
    assert lock.release_hashes("tqdm", "4.70.1", fetch) == ["aaa1", "aaa2"]
    with pytest.raises(ValueError, match="PyPI lists no file for tqdm==9"):
        lock.release_hashes("tqdm", "9", fetch)
    cpu = fake_fetch({"https://download.pytorch.org/whl/cpu/torch/": CPU_PAGE})
    assert lock.index_hashes("https://download.pytorch.org/whl/cpu", "torch", "2.13.0", cpu) == [
        "ddd"
    ]


def test_file_names_give_name_and_version():
    assert lock.file_version("Jinja2-3.1.6-py3-none-any.whl") == ("jinja2", "3.1.6")
    assert lock.file_version("jupyter_book-1.0.4.post1.tar.gz") == ("jupyter-book", "1.0.4.post1")
    assert lock.file_version("torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl")[1] == "2.13.0+cpu"
    assert lock.file_version("README.md") is None


def test_a_lock_is_written_and_read_back_with_its_hashes(tmp_path):
    wheel = tmp_path / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"wheel")
    pages = {
        "https://pypi.org/simple/tqdm/": PAGE,
        "https://pypi.org/simple/torch/": b'<a href="x/torch-2.13.0-cp311-cp311-x.whl#sha256=fff">',
        "https://download.pytorch.org/whl/cpu/torch/": CPU_PAGE,
    }
    pins = {"tqdm": ("tqdm", "4.70.1"), "torch": ("torch", "2.13.0")}
    entries = lock.hashed(
        pins,
        fake_fetch(pages),
        torch_index="https://download.pytorch.org/whl/cpu",
        hash_files=(wheel,),
    )
    assert entries["torch"][2] == sorted(["fff", "ddd", lock.file_hash(wheel)])
    text = lock.render(entries)
    assert text.startswith(lock.HEADER)
    assert "tqdm==4.70.1 \\\n    --hash=sha256:aaa1 \\\n    --hash=sha256:aaa2\n" in text
    assert lock.parse_lock(text) == entries
    path = tmp_path / "constraints.txt"
    path.write_text(text)
    assert lock.read_pins(path) == {"torch": "2.13.0", "tqdm": "4.70.1"}


def test_bump_sets_a_listed_pin_in_requirements(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("# c\ntorch==2.13.0\nsphinx_sitemap==2.9.0  # site\n")
    assert lock.set_requirement(req, "sphinx-sitemap==2.9.1")
    assert req.read_text() == "# c\ntorch==2.13.0\nsphinx_sitemap==2.9.1\n"
    assert not lock.set_requirement(req, "docutils==0.22")


def test_the_lock_hashes_every_pin_and_keeps_the_cuda_libraries(repo_root):
    entries = lock.parse_lock((repo_root / "constraints.txt").read_text(encoding="utf-8"))
    unhashed = [name for name, _, hashes in entries.values() if not hashes]
    assert not unhashed, f"pins without hashes (pip refuses them): {unhashed}: make lock"
    # PyPI's torch needs these on Linux; a CPU environment lacks them, the lock keeps them
    assert any(lock.KEEP_IF_ABSENT.fullmatch(k) and k.startswith("nvidia-") for k in entries)
    makefile = (repo_root / "Makefile").read_text(encoding="utf-8")
    assert '$(BIN)/python -m scripts.release.lock --bump "$(PKG)"' in makefile
