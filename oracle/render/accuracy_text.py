"""What a report's accuracy figures mean for its recommendation (issue 17 item 4: an
example report with its accuracy explained).

The accuracy of one run is 1 − |projected − measured| / measured (ParaDL §5.2); the
mean over the runs says how far off a projection typically is on this model and
system; the bias says in which direction.  A recommendation is as good as the lead of
the best strategy over the next one measured against that error.
"""

from __future__ import annotations


def lead(times: list[float]) -> float | None:
    """The best time's lead over the second best, as a fraction of the second
    ((second - best) / second); None with fewer than two."""
    ts = sorted(t for t in times if t == t)
    if len(ts) < 2 or ts[1] <= 0:
        return None
    return (ts[1] - ts[0]) / ts[1]


def accuracy_sentences(n: int, file: str, mean_accuracy: float, min_accuracy: float, bias: float,
                       best_lead: float | None = None, gpus: int | None = None) -> list[str]:  # fmt: skip
    """Sentences for a report's summary: the figures, what they mean, and whether the
    recommendation at ``gpus`` (the best strategy's ``best_lead``) stands against them."""
    error = 1.0 - mean_accuracy
    runs = f"{n} measured run{'s' if n != 1 else ''}"
    out = [
        f"Against {runs} ({file}): mean accuracy {100 * mean_accuracy:.1f}%, lowest {100 * min_accuracy:.1f}%"
        f" (accuracy = 1 − |projected − measured| / measured per run): a projection here is typically"
        f" {100 * error:.1f}% off, at worst {100 * (1 - min_accuracy):.1f}%."
    ]
    if abs(bias) >= 0.005:
        way = "slower" if bias < 0 else "faster"
        out.append(f"The runs were on average {100 * abs(bias):.1f}% {way} than projected"
                   " (`oracle fit runs` calibrates that away).")  # fmt: skip
    if best_lead is not None and gpus is not None:
        where = f"at {gpus:,} GPUs"
        if best_lead > error:
            out.append(f"The best strategy {where} leads the next by {100 * best_lead:.1f}%, more than the"
                       " typical error: the recommendation stands.")  # fmt: skip
        else:
            out.append(f"The best strategy {where} leads the next by only {100 * best_lead:.1f}%, within the"
                       " typical error: measure both before you commit.")  # fmt: skip
    return out


__all__ = ["accuracy_sentences", "lead"]
