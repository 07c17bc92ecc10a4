"""Tests of tricks_helpers.notebook: warnings shown without machine paths."""

import io
import warnings

import pytest

from tricks_helpers import notebook


@pytest.fixture(autouse=True)
def no_warning_options(monkeypatch):
    """Each test starts without -W/PYTHONWARNINGS options (the canary runs with some)."""
    monkeypatch.setattr("sys.warnoptions", [])


def test_shown_warnings_prints_category_and_first_line_only():
    out = io.StringIO()
    with notebook.shown_warnings(stream=out) as caught:
        warnings.warn("first line\nsecond line", UserWarning)
        warnings.warn("old API", DeprecationWarning)
    assert out.getvalue() == "UserWarning: first line\nDeprecationWarning: old API\n"
    assert [w.category for w in caught] == [UserWarning, DeprecationWarning]
    assert ".py" not in out.getvalue()


def test_shown_warnings_dedupes_by_default():
    out = io.StringIO()
    with notebook.shown_warnings(stream=out):
        for _ in range(3):
            warnings.warn("again", UserWarning)
    assert out.getvalue() == "UserWarning: again\n"
    out = io.StringIO()
    with notebook.shown_warnings(stream=out, dedupe=False):
        for _ in range(2):
            warnings.warn("again", UserWarning)
    assert out.getvalue().count("again") == 2


def test_shown_warnings_restores_filters():
    before = list(warnings.filters)
    with notebook.shown_warnings(stream=io.StringIO()):
        warnings.simplefilter("error")
    assert warnings.filters == before


def test_shown_warnings_defaults_to_stdout(capsys):
    with notebook.shown_warnings():
        warnings.warn("to stdout", RuntimeWarning)
    assert capsys.readouterr().out == "RuntimeWarning: to stdout\n"


def test_error_options_are_honoured(monkeypatch):
    monkeypatch.setattr("sys.warnoptions", ["error::DeprecationWarning", "ignore::UserWarning"])
    with pytest.raises(DeprecationWarning, match="old API"):
        with notebook.shown_warnings(stream=io.StringIO()):
            warnings.warn("old API", DeprecationWarning)
    out = io.StringIO()
    with notebook.shown_warnings(stream=out):
        warnings.warn("still shown", UserWarning)
    assert out.getvalue() == "UserWarning: still shown\n"


def test_error_categories_parsing():
    assert notebook._error_categories(
        ["error::FutureWarning", "error::NoSuchWarning", "error:msg:UserWarning", "default", "error::int"]
    ) == [FutureWarning]
