"""Tests of scripts/probes/api.py: how a probed case is classified."""

import torch

from scripts.probes import api as probe_api


def _raise(err):
    def call():
        raise err

    return call


def test_an_error_naming_the_function_is_clear_and_others_are_obscure():
    clear = probe_api._classify("f", "x", "NaN float", _raise(ValueError("f: x must be finite")))
    assert clear[0] == "clear error"
    assert probe_api._classify("f", "x", "NaN float", _raise(ValueError("bad")))[0] == "obscure"
    assert probe_api._classify("f", "x", "NaN float", _raise(ZeroDivisionError("f")))[0] == (
        "obscure"
    )


def test_a_value_for_a_wrong_type_or_a_finite_number_from_nan_is_suspect():
    assert probe_api._classify("f", "x", "wrong type: str", lambda: 3)[0] == "suspect"
    assert probe_api._classify("f", "x", "NaN tensor", lambda: 1.0)[0] == "suspect"
    assert probe_api._classify("f", "x", "NaN tensor", lambda: float("nan"))[0] == "returned"
    assert probe_api._classify("f", "x", "meta tensor", lambda: torch.ones(2))[0] == "returned"


def test_records_are_not_probed():
    from tricks_helpers import bench, training

    assert probe_api._is_record(bench.Measurement) and probe_api._is_record(training.Digits)
    assert not probe_api._is_record(bench.compare)


def test_every_public_module_is_probed_or_named_with_why_it_is_not():
    import pkgutil

    import tricks_helpers

    public = {
        f"tricks_helpers.{m.name}"
        for m in pkgutil.iter_modules(tricks_helpers.__path__)
        if not m.name.startswith("_")
    }
    assert {"tricks_helpers.limits", "tricks_helpers.resume", "tricks_helpers.bench"} <= public
    assert set(probe_api.MODULES) | set(probe_api.NOT_PROBED) == public
    assert not set(probe_api.MODULES) & set(probe_api.NOT_PROBED)
    assert all(why for why in probe_api.NOT_PROBED.values())
