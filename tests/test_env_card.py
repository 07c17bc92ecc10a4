"""Tests of the environment card's provenance and torch-version warning (tricks_helpers.env)."""

from __future__ import annotations

import dataclasses
import re
import subprocess

import pytest
import torch

from scripts.results import page as results_page
from tricks_helpers import env


def card(**changes) -> env.EnvCard:
    base = env.EnvCard(
        torch_version="2.13.0",
        torch_build="cpu",
        python="3.11.7",
        device="cpu",
        cpu="Test CPU",
        threads=2,
        cuda="not available",
        cudnn="not available",
        gpu="none",
        bf16="emulated",
        executed="2026-11-20",
        commit="0123456789ab",
    )
    return dataclasses.replace(base, **changes)


def keys(c: env.EnvCard) -> list[str]:
    return [line.split()[0] for line in c.lines()]


def test_executed_with_torch_is_the_requirements_pin(repo_root):
    pin = re.search(r"^torch==(\S+)$", (repo_root / "requirements.txt").read_text(), flags=re.M)
    assert pin and pin.group(1) == env.EXECUTED_WITH_TORCH, (
        "requirements.txt's torch== pin and tricks_helpers.env.EXECUTED_WITH_TORCH must agree"
    )


# the card's fixed lines, in order: machine facts, then the page's provenance
CARD_KEYS = ["torch", "python", "device", "cpu", "threads", "cuda", "cudnn", "gpu", "bf16"]
CARD_KEYS += ["executed", "commit"]


def test_this_machines_card_has_the_fixed_lines_in_order():
    c = env.environment_card()
    assert [k for k in keys(c) if k != "warning"] == CARD_KEYS
    assert str(c).startswith("environment\n")


def test_provenance_lines_follow_the_machine_lines_and_precede_extras():
    c = card(extras={"lmdb": "3.0"}, expected_torch="2.13.0")
    assert keys(c) == [*CARD_KEYS, "lmdb"]
    assert "  executed 2026-11-20" in c.lines() and "  commit   0123456789ab" in c.lines()


def test_another_torch_gets_a_visible_warning_under_the_torch_line():
    c = card(torch_version="2.14.1", torch_build="cu130", expected_torch="2.13.0")
    assert c.torch_mismatch
    assert c.lines()[:2] == [
        "  torch    2.14.1 (build cu130)",
        "  warning  the book's outputs were made with torch 2.13.0: what you see may differ",
    ]
    assert max(len(line) for line in c.lines()) < 100
    assert not card(expected_torch="2.13.0").torch_mismatch
    assert "warning" not in keys(card(expected_torch="2.13.0"))


def test_this_process_card_is_dated_and_has_a_commit():
    c = env.environment_card()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", c.executed)
    assert c.commit
    assert c.expected_torch == env.EXECUTED_WITH_TORCH
    assert c.torch_mismatch == (torch.__version__.split("+")[0] != env.EXECUTED_WITH_TORCH)


def test_source_commit_in_this_checkout_is_head(repo_root):
    head = subprocess.run(
        ["git", "-C", str(repo_root), "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
    )
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    assert env.source_commit().split()[0] == head.stdout.strip()


def test_source_commit_counts_code_changes_not_outputs(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    pkg = tmp_path / "tricks_helpers"
    pkg.mkdir()
    files = [pkg / "x.py", tmp_path / "book" / "01.ipynb", tmp_path / "results" / "r.json"]
    for f in files:
        f.parent.mkdir(exist_ok=True)
        f.write_text("0")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    for f in files[1:]:  # outputs being made: a notebook, a record
        f.write_text("1")
    assert not env.source_commit(pkg).endswith("(+ uncommitted changes)")
    files[0].write_text("1")  # code
    assert env.source_commit(pkg).endswith("(+ uncommitted changes)")


def test_source_commit_outside_a_checkout(tmp_path):
    pkg = tmp_path / "site" / "tricks_helpers"
    pkg.mkdir(parents=True)
    assert env.source_commit(pkg) in ("unknown",) or env.source_commit(pkg).endswith(
        "(installed from git)"
    )


def test_provenance_and_warning_sanitize_as_intended(sanitize):
    text = sanitize(str(card(torch_version="2.14.1", expected_torch="2.13.0")))
    lines = text.splitlines()
    assert "  executed <machine>" in lines and "  commit <machine>" in lines
    assert any(
        line.startswith("  warning  the book's outputs were made with torch 2.13.0")
        for line in lines
    ), "the warning is compared, never masked"


def test_results_page_reads_the_provenance_back(make_notebook):
    path = make_notebook("01_x.ipynb", ["# 01 · X", {"outputs": [str(card()) + "\n"]}])
    ch = results_page.read_chapter(path)
    assert ch.card["executed"] == "2026-11-20" and ch.card["commit"] == "0123456789ab"
