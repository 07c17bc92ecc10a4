"""machine_facts refuses a thread count no machine has (issue 32: ``threads=0`` named "0t").

Kept apart from tests/test_machine_records.py, which moves with its module (issue 32, helper A).
"""

from __future__ import annotations

import pytest

from tricks_helpers import machine_records


@pytest.mark.parametrize(
    ("threads", "error", "match"),
    [
        (0, ValueError, "machine_facts: threads must be"),
        (-2, ValueError, "machine_facts: threads must be"),
        (2.0, TypeError, "machine_facts: threads must be"),
        ("2", TypeError, "machine_facts: threads must be"),
        (True, TypeError, "machine_facts: threads must be"),
    ],
)
def test_machine_facts_refuses_a_thread_count_below_one(threads, error, match):
    with pytest.raises(error, match=match):
        machine_records.machine_facts(cpu="x", flags=frozenset(), environ={}, threads=threads)


def test_machine_facts_keeps_a_positive_thread_count():
    facts = machine_records.machine_facts(cpu="x", flags=frozenset(), environ={}, threads=3)
    assert facts["threads"] == 3 and "-3t" in facts["id"]
