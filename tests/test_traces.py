"""Tests of tricks_helpers.traces on hand-written Chrome traces (no profiler runs here).

``tests/test_profiling.py`` reads traces the profiler really exported; these pin the reader's
rules: categories, gzip by content, what is skipped, the time origin and the order of spans.
"""

from __future__ import annotations

import gzip
import json
import re

import pytest

from tricks_helpers import traces

EVENTS = [
    {"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "ts": 100, "dur": 50},
    {"ph": "X", "name": "data", "cat": "user_annotation", "ts": 100, "dur": 10, "tid": 7},
    {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "ts": 90, "dur": 3},
    {"ph": "X", "name": "data", "cat": "user_annotation", "ts": 130.5, "dur": 10},
    {"ph": "i", "name": "data", "cat": "user_annotation", "ts": 140},  # an instant: counted
    {"ph": "X", "name": "no time", "cat": "user_annotation"},  # no ts: no span
    {"cat": "user_annotation"},  # no name: skipped
    "not an event",
]


def write(tmp_path, events=EVENTS, name="t.json", packed=False):
    path = tmp_path / name
    raw = json.dumps({"traceEvents": events}).encode()
    path.write_bytes(gzip.compress(raw) if packed else raw)
    return path


def test_counts_by_name_within_a_category_or_all(tmp_path):
    path = write(tmp_path)
    assert traces.trace_event_counts(path) == {"ProfilerStep#1": 1, "data": 3, "no time": 1}
    assert traces.trace_event_counts(path, category="cpu_op") == {"aten::mm": 1}
    assert traces.trace_event_counts(str(path), category=None)["data"] == 3
    assert traces.trace_event_counts(write(tmp_path, [], "empty.json")) == {}


def test_gzip_is_recognised_by_content_not_by_name(tmp_path):
    plain = write(tmp_path)
    packed = write(tmp_path, name="t.json", packed=True)  # a .json name holding gzip
    assert traces.trace_event_counts(packed) == traces.trace_event_counts(plain)


def test_spans_start_at_the_first_event_of_the_category_longer_first_on_ties(tmp_path):
    spans = traces.trace_spans(write(tmp_path))
    assert [(s.name, s.start_us, s.duration_us) for s in spans] == [
        ("ProfilerStep#1", 0.0, 50.0),
        ("data", 0.0, 10.0),
        ("data", 30.5, 10.0),
    ]
    assert (
        spans[1].thread == "7"
        and spans[0].thread == ""
        and spans[0].category == ("user_annotation")
    )
    only = traces.trace_spans(write(tmp_path), names=["data"])
    assert [s.start_us for s in only] == [0.0, 30.5], "the origin stays the category's"
    every = traces.trace_spans(write(tmp_path), category=None)
    assert (every[0].name, every[0].start_us) == ("aten::mm", 0.0)
    assert every[1].start_us == 10.0
    assert traces.trace_spans(write(tmp_path), category="gpu_user_annotation") == []


def test_spans_refuse_a_name_with_no_event_and_bad_arguments(tmp_path):
    path = write(tmp_path)
    with pytest.raises(ValueError, match=r"no events named \['nope'\] in t.json"):
        traces.trace_spans(path, names=["data", "nope"])
    with pytest.raises(TypeError, match="category must be str"):
        traces.trace_spans(path, category=1)
    with pytest.raises(TypeError):
        traces.trace_spans(path, names="data")
    with pytest.raises(TypeError, match="path must be str or PathLike"):
        traces.trace_event_counts(None)


@pytest.mark.parametrize(
    "content, match",
    [
        (b"\x1f\x8b\x08\x00broken", "damaged gzip file"),
        (b"\xff\xfe\x00", "not a UTF-8 JSON file nor gzip-compressed"),
        (b"{not json", "is not JSON"),
        (b"[1, 2]", "has no 'traceEvents' list"),
        (b'{"traceEvents": {}}', "has no 'traceEvents' list"),
    ],
)
def test_what_is_no_chrome_trace_is_a_value_error_naming_the_file(tmp_path, content, match):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    for read in (traces.trace_event_counts, traces.trace_spans):
        with pytest.raises(ValueError, match=rf"^{read.__name__}: bad\.json .*{re.escape(match)}"):
            read(path)
