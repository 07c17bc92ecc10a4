"""The JSON Schema plumbing of the workshop's file checks: one validator, its errors in the
project's words, and the one-line text field every schema is built from.

Used by the results file's schema (``scripts.results.schema``) and the compat record's
(``scripts.compat.schema``): a wrong type is a ``TypeError`` naming where
(``results.machine.threads``), anything else a ``ValueError``; every number must be finite
(NaN passes every comparison a schema can state), every count an integer (not a bool, not
``2.0``), every text one line without a character of ``tricks_helpers.fields.FORBIDDEN``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import jsonschema

from tricks_helpers import fields

__all__ = ["Validator", "schema_check", "short", "text_schema"]

# Python's `$` also matches before a final newline, so every string also refuses control
# characters (newlines included), invisible and bidi characters with this search, which has
# no anchor to fool: the package's one definition (tricks_helpers.fields.FORBIDDEN).
_CONTROL = fields.FORBIDDEN


def text_schema(max_length: int, min_length: int = 0, pattern: str | None = None) -> dict:
    """A one-line string schema of bounded length (and an optional allowed-characters pattern)."""
    out: dict[str, Any] = {
        "type": "string",
        "minLength": min_length,
        "maxLength": max_length,
        "not": {"pattern": _CONTROL},
        "description": "one line of text without control characters",
    }
    if pattern:
        out["pattern"] = pattern
    return out


def _is_integer(_checker: Any, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # not 2.0, not True


def _is_number(_checker: Any, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)  # NaN passes every comparison a schema can state: refuse it


Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number}
    ),
)


def _where(name: str, path: Iterable[Any]) -> str:
    out = name
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _error(name: str, error: jsonschema.ValidationError) -> Exception:
    """The schema's complaint as the project's errors: a wrong type is a TypeError."""
    where = _where(name, error.absolute_path)
    if error.validator == "type":
        return TypeError(
            f"{where} must be of type {error.validator_value}, got {short(error.instance)}"
        )
    if error.validator == "not":
        return ValueError(
            f"{where} must be one line without control characters: {short(error.instance)}"
        )
    if error.validator == "pattern":
        return ValueError(
            f"{where} {short(error.instance)} has characters outside {error.validator_value}"
        )
    message = error.message.replace(repr(error.instance), short(error.instance))
    message = message if len(message) <= 300 else message[:297] + "..."
    return ValueError(f"{where}: {message}")


def schema_check(schema: Mapping[str, Any]) -> Callable[[Any, str], None]:
    """``check(data, name)`` for ``schema`` (itself checked first): raises the best match of its
    complaints as :func:`_error` words them. Used here and by ``compat.schema.check_compat``."""
    Validator.check_schema(schema)
    validator = Validator(schema)

    def check(data: Any, name: str) -> None:
        errors = list(validator.iter_errors(data))
        if errors:
            raise _error(name, jsonschema.exceptions.best_match(errors))

    return check
