"""The report's accuracy sentences (oracle/render/accuracy_text.py), by hand."""

from oracle.render.accuracy_text import accuracy_sentences, lead


def test_lead_by_hand():
    assert lead([10.0, 12.5, 30.0]) == 0.2  # (12.5 - 10) / 12.5
    assert lead([5.0]) is None and lead([]) is None


def test_a_lead_beyond_the_typical_error_stands():
    s = accuracy_sentences(6, "runs.csv", 0.947, 0.865, -0.044, best_lead=0.2, gpus=512)
    assert s[0].startswith("Against 6 measured runs (runs.csv): mean accuracy 94.7%, lowest 86.5%")
    assert "typically 5.3% off, at worst 13.5%" in s[0]
    assert s[1].startswith("The runs were on average 4.4% slower than projected")
    assert s[2] == ("The best strategy at 512 GPUs leads the next by 20.0%, more than the typical error:"
                    " the recommendation stands.")


def test_a_lead_within_the_error_says_measure_both():
    s = accuracy_sentences(1, "r.csv", 0.9, 0.9, 0.001, best_lead=0.05, gpus=8)
    assert "1 measured run (r.csv)" in s[0] and len(s) == 2  # no bias sentence below 0.5%
    assert "only 5.0%, within the typical error: measure both" in s[1]
