"""Tests of tricks_helpers.quoting: the one quoting of advice, shared by the tip and its audit."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scripts.audits import claims as audit_claims
from tricks_helpers import claims, quoting


def test_quoted_leaves_no_ascii_quote():
    text = quoting.quoted('don\'t "guess"')
    assert text == "\u201cdon\u2019t \u201dguess\u201d\u201d"
    assert "'" not in text and '"' not in text


def test_quoted_refuses_a_non_string():
    with pytest.raises(TypeError, match="quoted: advice"):
        quoting.quoted(None)


def test_the_tip_and_its_audit_quote_through_one_function():
    assert audit_claims.quoted is quoting.quoted
    book = claims.Claims("x")
    book.add(claims.from_count("k", 'don\'t "guess"', False, "counted"))
    assert quoting.quoted('don\'t "guess"') in book.tip_clause()


def test_the_claims_audit_imports_no_torch(repo_root):
    """The audit reads stored notebooks only: importing it (and the quoting) loads no torch."""
    code = "import sys; import scripts.audits.claims; print('torch' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=repo_root, check=True
    )
    assert done.stdout.strip() == "False"
