"""The report's accuracy sentences (oracle/render/accuracy_text.py), by hand."""

from oracle.render.accuracy_text import accuracy_sentences, lead


def test_lead_by_hand():
    assert lead([10.0, 12.5, 30.0]) == 0.2  # (12.5 - 10) / 12.5
    assert lead([5.0]) is None and lead([]) is None


def test_a_lead_beyond_the_typical_error_stands():
    s = accuracy_sentences(6, "runs.csv", 0.947, 0.865, (1.046, 0.98, 1.16), best_lead=0.2, gpus=512)
    assert s[0].startswith("Against 6 measured runs (runs.csv): mean accuracy 94.7%, lowest 86.5%")
    assert "typically off by 5.3% of the measured time, at worst by 13.5%" in s[0]
    assert s[1].startswith("The runs took 1.05x their projected time (geometric mean of measured / projected;"
                           " from 0.98x to 1.2x)")
    assert s[2] == ("The best strategy at 512 GPUs leads the next by 20.0%, more than the typical error:"
                    " the recommendation stands.")


def test_ratios_are_said_as_ratios():
    """Issue 23: runs that took 2.7x their projection were 'on average 63.8% slower than
    projected'; a ratio is said as a ratio, below 1 too."""
    slow = accuracy_sentences(3, "r.csv", 0.37, 0.3, (2.7, 2.2, 3.4))
    assert slow[1].startswith("The runs took 2.7x their projected time (geometric mean of measured / projected;"
                              " from 2.2x to 3.4x)")
    assert not any("slower" in x or "faster" in x for x in slow)
    fast = accuracy_sentences(1, "r.csv", 0.75, 0.75, (0.8, 0.8, 0.8))
    assert fast[1].startswith("The run took 0.8x its projected time:")


def test_a_lead_within_the_error_says_measure_both():
    s = accuracy_sentences(1, "r.csv", 0.9, 0.9, (1.001, 1.001, 1.001), best_lead=0.05, gpus=8)
    assert "1 measured run (r.csv)" in s[0] and len(s) == 2  # no ratio sentence within 0.5% of 1
    assert "only 5.0%, within the typical error: measure both" in s[1]


def test_ratio_and_gap_formats_by_hand():
    from oracle.units import fmt_gap, fmt_ratio

    assert [fmt_ratio(r) for r in (2.71, 0.83, 15.4, 1234.5, 1.04, 0.95, 1.0)] == [
        "2.7x", "0.83x", "15x", "1,234x", "1.04x", "0.95x", "1x"]  # fmt: skip
    assert fmt_ratio(float("nan")) == "n/a" and fmt_ratio(float("inf")) == "inf"
    # a gap to the best: a percentage below twice the best, a multiple from there (not +170%)
    assert (fmt_gap(1.022), fmt_gap(1.52, digits=0), fmt_gap(2.7), fmt_gap(16.0)) == ("+2.2%", "+52%", "2.7x", "16x")
