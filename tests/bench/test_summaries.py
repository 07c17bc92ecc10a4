"""Tests of tricks_helpers.bench.summaries: the tally, the time change."""

import pytest
from test_verdicts import fake  # one builder of comparisons from chosen ratios

from tricks_helpers import bench


def test_tally_counts_verdicts_as_measurements(sanitize):
    cs = [fake(ratios=(1.5,) * 6), fake(ratios=(1.0,) * 6), fake(ratios=(0.8, 1.0, 1.2) * 2)]
    assert bench.tally(cs) == "FASTER ~1, SLOWER ~0, SAME ~1, UNDECIDED ~1 of 3"
    other = [fake(ratios=(0.5,) * 6)] * 3
    assert sanitize(bench.tally(cs)) == sanitize(bench.tally(other))
    # a stored tally of the three-verdict book sanitizes like a new one (nbval before re-running)
    old = "read order, 5 formats: FASTER ~1, SLOWER ~0, NO CLEAR DIFFERENCE ~4 of 5"
    new = "read order, 5 formats: FASTER ~1, SLOWER ~0, SAME ~3, UNDECIDED ~1 of 5"
    assert sanitize(old) == sanitize(new) == "read order, 5 formats: VERDICT counts of 5"
    with pytest.raises(ValueError, match="no comparisons"):
        bench.tally([])
    with pytest.raises(TypeError, match="must be Comparison"):
        bench.tally([1.0])


def test_time_change_text_words_the_interval_as_time_factors(sanitize):
    cost = fake(ratios=(0.84, 0.9, 0.91, 0.93, 0.96, 0.95))
    assert bench.time_change_text(cost) == "time x~1.04 to x~1.19"  # a cost: both above 1
    gain = fake(ratios=(2.0,) * 6)
    assert bench.time_change_text(gain) == "time x~0.5 to x~0.5"
    assert sanitize(bench.time_change_text(cost)) == sanitize(bench.time_change_text(gain))
    with pytest.raises(TypeError, match="must be Comparison"):
        bench.time_change_text(0.9)
