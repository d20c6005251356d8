"""What a report's accuracy figures mean for its recommendation (issue 17 item 4: an
example report with its accuracy explained).

The accuracy of one run is 1 − |projected − measured| / measured (ParaDL §5.2); the
mean over the runs says how far off a projection typically is on this model and
system; measured / projected (its geometric mean, lowest and highest) says in which
direction and by how much, as a ratio (issue 23: runs that took 2.7x their projection
are not "63% slower").  A recommendation is as good as the lead of the best strategy
over the next one measured against that error.
"""

from __future__ import annotations

from oracle.units import fmt_ratio


def lead(times: list[float]) -> float | None:
    """The best time's lead over the second best, as a fraction of the second
    ((second - best) / second); None with fewer than two."""
    ts = sorted(t for t in times if t == t)
    if len(ts) < 2 or ts[1] <= 0:
        return None
    return (ts[1] - ts[0]) / ts[1]


def accuracy_sentences(n: int, file: str, mean_accuracy: float, min_accuracy: float,
                       ratios: tuple[float, float, float], best_lead: float | None = None,
                       gpus: int | None = None) -> list[str]:  # fmt: skip
    """Sentences for a report's summary: the figures, what they mean, and whether the
    recommendation at ``gpus`` (the best strategy's ``best_lead``) stands against them.
    ``ratios``: measured / projected over the runs, (geometric mean, lowest, highest)."""
    error = 1.0 - mean_accuracy
    runs = f"{n} measured run{'s' if n != 1 else ''}"
    out = [
        f"Against {runs} ({file}): mean accuracy {100 * mean_accuracy:.1f}%, lowest {100 * min_accuracy:.1f}%"
        f" (accuracy = 1 − |projected − measured| / measured per run): a projection here is typically off by"
        f" {100 * error:.1f}% of the measured time, at worst by {100 * (1 - min_accuracy):.1f}%."
    ]
    mean, low, high = ratios
    if abs(mean - 1) >= 0.005:  # NaN (no run has a projection) says nothing
        took = "The run took {} its" if n == 1 else "The runs took {} their"
        how = "" if n == 1 else f" (geometric mean of measured / projected; from {fmt_ratio(low)} to {fmt_ratio(high)})"
        out.append(took.format(fmt_ratio(mean)) + f" projected time{how}: `oracle fit runs` calibrates a system to"
                   " such runs.")  # fmt: skip
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
