"""A fresh run's outputs against the stored ones, compared as nbval compares them (``make compat``).

CI runs nbval with ``nbval_sanitize.cfg``; a run under another torch on purpose compares the
same way with the lines naming the torch release masked too (``release_lines.rules``). For each
code cell nbval would compare (not tagged ``nbval-skip`` or ``nbval-ignore-output``), both
sides' outputs are flattened as nbval flattens them: streams of one name joined (``stdout``,
``stderr``), each MIME type of a result or display by its key (images left out, as nbval does
without nbdime), an error's name and value; every string sanitized; the two must be equal.

:func:`compare` returns how many cells were compared and the code cell numbers (counted as
``compat_outcome`` counts them: code cells from 1, the Colab set-up cell first) that differ.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from scripts.book.notebook_cells import cell_tags, stored_text

__all__ = ["NOT_COMPARED_TAGS", "SKIPPED_KEYS", "flatten", "compare"]

NOT_COMPARED_TAGS = frozenset({"nbval-skip", "nbval-ignore-output"})
# nbval's skip_compare without nbdime: keys and MIME types never compared
SKIPPED_KEYS = frozenset(
    {
        "metadata",
        "traceback",
        "prompt_number",
        "output_type",
        "name",
        "execution_count",
        "application/vnd.jupyter.widget-view+json",
        "image/png",
        "image/jpeg",
    }
)


def _sanitize(value: Any, rules: list[tuple[str, str]]) -> Any:
    if not isinstance(value, str):
        return value
    for regex, replace in rules:
        value = re.sub(regex, replace, value)
    return value


def flatten(outputs: list[Any], rules: list[tuple[str, str]]) -> dict[str, list[Any]]:
    """``{key: [sanitized value, ...]}`` of a cell's outputs, as nbval compares them."""
    streams: dict[str, str] = {}
    merged: list[dict[str, Any]] = []
    for out in outputs:
        out = dict(out)
        if out.get("output_type") == "stream":
            name = out.get("name", "stdout")
            if name in streams:
                streams[name] += stored_text(out.get("text"))
                continue
            streams[name] = stored_text(out.get("text"))
            merged.append({"output_type": "stream", "stream_name": name})
        else:
            merged.append(out)
    flat: dict[str, list[Any]] = defaultdict(list)
    for out in merged:
        if "stream_name" in out:
            flat[out["stream_name"]].append(_sanitize(streams[out["stream_name"]], rules))
            continue
        for key, value in out.items():
            if key in SKIPPED_KEYS:
                continue
            if key == "data":
                for mime, data in value.items():
                    if mime not in SKIPPED_KEYS:
                        flat[mime].append(_sanitize(stored_text(data), rules))
            else:
                flat[key].append(_sanitize(value, rules))
    return dict(flat)


def compare(stored: Any, fresh: Any, rules: list[tuple[str, str]]) -> dict[str, Any]:
    """``{"cells": compared, "differing": [code cell numbers]}`` of ``fresh`` against ``stored``.

    The two notebooks must have the same code cells in the same order (the fresh one is the
    stored one executed); a cell count that differs compares nothing and says so.

    Raises:
        ValueError: when their code cells differ in number.
    """
    old = [c for c in stored.cells if c.cell_type == "code"]
    new = [c for c in fresh.cells if c.cell_type == "code"]
    if len(old) != len(new):
        raise ValueError(f"compare: {len(old)} stored code cells, {len(new)} fresh ones")
    compared, differing = 0, []
    for number, (a, b) in enumerate(zip(old, new, strict=True), start=1):
        if cell_tags(a) & NOT_COMPARED_TAGS:
            continue
        compared += 1
        if flatten(a.get("outputs", []), rules) != flatten(b.get("outputs", []), rules):
            differing.append(number)
    return {"cells": compared, "differing": differing}
