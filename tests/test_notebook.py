"""Tests of tricks_helpers.notebook: warnings, logs and expected errors shown stably."""

import io
import logging
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
        [
            "error::FutureWarning",
            "error::NoSuchWarning",
            "error:msg:UserWarning",
            "default",
            "error::int",
        ]
    ) == [FutureWarning]


def test_shown_warnings_prints_even_when_the_block_raises():
    out = io.StringIO()
    with pytest.raises(RuntimeError, match="boom"):
        with notebook.shown_warnings(stream=out):
            warnings.warn("before the error", UserWarning)
            raise RuntimeError("boom")
    assert out.getvalue() == "UserWarning: before the error\n"


def test_captured_logs_records_and_restores():
    logger = logging.getLogger("tricks_test.child")
    parent = logging.getLogger("tricks_test")
    seen = []

    class H(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    parent.addHandler(H())
    try:
        with notebook.captured_logs("tricks_test") as records:
            logger.warning("hidden %d", 1)
            parent.warning("also hidden")
        assert [r.getMessage() for r in records] == ["hidden 1", "also hidden"]
        assert seen == []
        parent.warning("shown")
        assert seen == ["shown"] and parent.propagate is True
    finally:
        parent.handlers.clear()


def test_captured_logs_errors():
    with pytest.raises(ValueError, match="non-empty logger names"):
        with notebook.captured_logs():
            pass
    with pytest.raises(ValueError, match="non-empty logger names"):
        with notebook.captured_logs(""):
            pass
    with pytest.raises(TypeError, match="name must be str"):
        with notebook.captured_logs(3):
            pass


def test_show_error_prints_one_line_and_returns_the_exception():
    out = io.StringIO()

    def bad():
        raise ValueError("first sentence. second sentence\nsecond line /tmp/path")

    err = notebook.show_error(bad, ValueError, label="case", stream=out)
    assert isinstance(err, ValueError)
    assert out.getvalue() == "case: ValueError: first sentence. second sentence\n"
    out = io.StringIO()
    notebook.show_error(bad, (TypeError, ValueError), first_sentence=True, stream=out)
    assert out.getvalue() == "ValueError: first sentence.\n"
    out = io.StringIO()
    notebook.show_error(bad, width=5, stream=out)
    assert out.getvalue() == "ValueError: first\n"


def test_show_error_fails_when_nothing_raises_and_lets_others_through():
    with pytest.raises(
        AssertionError, match=r"expected ValueError \(quiet\), but the call returned"
    ):
        notebook.show_error(lambda: None, ValueError, label="quiet")
    with pytest.raises(KeyError):
        notebook.show_error(lambda: {}["x"], ValueError)
    with pytest.raises(TypeError, match="fn must be callable"):
        notebook.show_error(3)


@pytest.mark.parametrize(
    "where",
    [
        "/__w/pytorch/pytorch/aten/src/ATen/quantized/Quantizer.cpp:111.",
        "/opt/conda/conda-bld/pytorch_1720538643151/work/aten/src/ATen/Context.cpp:164.",
        "C:\\actions-runner\\_work\\pytorch\\aten\\src\\ATen\\native\\Copy.cpp:308.",
    ],
)
def test_sanitize_masks_the_build_path_of_a_cpp_warning(sanitize, where):
    """Issue 20, defect 7: the same warning from another build must compare equal."""
    line = f"UserWarning: quantized tensors are deprecated. (Triggered internally at {where})"
    assert sanitize(line) == (
        "UserWarning: quantized tensors are deprecated. (Triggered internally at <build path>)"
    )


def test_skipped_prints_and_returns_one_line_with_the_counted_prefix(capsys):
    line = notebook.skipped("int4 weight-only rows", "torchao >= 0.18", "torchao 0.16.0")
    assert line == (
        "[skipped] int4 weight-only rows: needs torchao >= 0.18, this run has torchao 0.16.0"
    )
    assert capsys.readouterr().out == line + "\n"
    assert line.startswith(notebook.SKIPPED_PREFIX) and notebook.SKIPPED_PREFIX == "[skipped] "
    out = io.StringIO()
    assert notebook.skipped("a", "b", "c", stream=out) == "[skipped] a: needs b, this run has c"
    assert out.getvalue() == "[skipped] a: needs b, this run has c\n"


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((1, "torchao >= 0.18", "torchao 0.16.0"), TypeError, "section must be str"),
        (("int4", None, "torchao 0.16.0"), TypeError, "needs must be str"),
        (("int4", "torchao >= 0.18", b"0.16"), TypeError, "have must be str"),
        (("  ", "torchao >= 0.18", "torchao 0.16.0"), ValueError, "section must not be empty"),
        (("int4", "", "torchao 0.16.0"), ValueError, "needs must not be empty"),
        (("int4", "torchao >= 0.18", "0.16\n0.17"), ValueError, "have must be one line"),
    ],
)
def test_skipped_refuses_bad_arguments(args, error, match, capsys):
    with pytest.raises(error, match=match):
        notebook.skipped(*args)
    assert capsys.readouterr().out == ""  # nothing printed on a refusal
