"""Collective times over all message sizes: one α-β line per protocol regime.

NCCL picks, for every collective call, the algorithm and protocol its tuning model
expects to be fastest (src/graph/tuning.cc; ``NCCL_PROTO`` in NCCL's environment
documentation): LL (8-byte stores with flags: the lowest latency, a fraction of the
bandwidth) for small messages, LL128 (128-byte lines: near-full bandwidth, more
latency) in between, Simple (full bandwidth, the most latency) for large ones; trees
replace rings where their log-depth latency wins.  A measured all-reduce curve is then
the lower envelope of a few α-β lines,

    t(m) = min_k ( A_op(p)·α_k + B_op(p)·m·β_k ),

which the ring model of docs/cost-model.md (one line) only matches above Hockney's n½: small
messages come out 6-8x too slow.  :func:`fit_regimes` fits K lines to a log's whole
size range: the sizes are cut into K contiguous ranges, each range fitted by weighted
least squares of the relative error (as the one-line fit), and the cuts chosen to
minimise the squared relative error of the envelope over all sizes (exhaustive over
cut pairs: a log has ~30 sizes).  The last line is the level's own α, β (Simple, large
messages); the others become the level's ``protocols:`` in a system file, and every
ring collective of the cost model takes the cheapest line (compute/network.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

# names given to the lines below the level's own (Simple) line, smallest messages first
PROTOCOL_NAMES = {1: (), 2: ("LL",), 3: ("LL", "LL128"), 4: ("LL", "LL128", "Simple-small")}


@dataclass(frozen=True)
class Line:
    alpha_s: float
    beta_s_per_byte: float
    from_bytes: int  # the smallest size of the range it was fitted to


def solve_bounded(a: np.ndarray, bm: np.ndarray, t: np.ndarray, alpha_floor: float, beta_floor: float) -> tuple[float, float]:
    """Weighted least squares of t ≈ a·α + bm·β (weights 1/t²) with α >= alpha_floor and
    β >= beta_floor: the unconstrained solution, else the best on the active bound
    (a 2-parameter convex problem: the bound that is violated is active)."""
    w = 1.0 / t
    xa, xb = a * w, bm * w
    X = np.column_stack([xa, xb])
    scale = np.linalg.norm(X, axis=0)
    scale[scale == 0] = 1.0
    sol, *_ = np.linalg.lstsq(X / scale, np.ones_like(t), rcond=None)
    alpha, beta = (sol / scale).tolist()
    if alpha < alpha_floor:
        alpha = alpha_floor
        beta = float(np.dot(xb, 1.0 - xa * alpha) / np.dot(xb, xb))
    if beta < beta_floor:
        beta = beta_floor
        alpha = max(alpha_floor, float(np.dot(xa, 1.0 - xb * beta) / np.dot(xa, xa)))
    return float(alpha), float(beta)


def envelope(lines, a, b, m) -> np.ndarray:
    """min_k (a·α_k + b·m·β_k) for arrays a, b, m of equal length."""
    return np.min([a * ln.alpha_s + b * m * ln.beta_s_per_byte for ln in lines], axis=0)


def fit_regimes(a: np.ndarray, b: np.ndarray, m: np.ndarray, t: np.ndarray, k: int,
                alpha_floor: float = 1e-9, beta_floor: float = 1e-15, last_from: float | None = None) -> list[Line]:
    """K lines whose lower envelope fits t(m) over all sizes (module doc); rows may come
    from several logs of one span (a, b: each row's A_op(p), B_op(p)).  ``last_from``:
    the last (largest-message) line is fitted to exactly the sizes from there up — the
    bandwidth-bound range of the one-line fit, which gradient all-reduces live in — so
    it is the one-line fit, and the many small sizes cannot pull it away."""
    sizes = np.unique(m)
    if sizes.size < 2 * k:
        k = max(1, sizes.size // 2)
    fits: dict[tuple[int, int], Line] = {}
    floor = [beta_floor]

    def line(i: int, j: int) -> Line:  # sizes[i:j]
        if (i, j) not in fits:
            sel = (m >= sizes[i]) & (m <= sizes[j - 1])
            al, be = solve_bounded(a[sel], b[sel] * m[sel], t[sel], alpha_floor, floor[0] if j < n else beta_floor)
            fits[(i, j)] = Line(al, be, int(sizes[i]))
        return fits[(i, j)]

    best: tuple[float, list[Line]] | None = None
    n = sizes.size
    fixed = int(np.searchsorted(sizes, last_from)) if last_from is not None else None
    if fixed is not None and (fixed < 2 * (k - 1) or n - fixed < 2):
        fixed = None  # too few sizes on one side: cut freely
    if fixed is not None:
        # no protocol moves more bytes per second than the large-message one (NCCL's LL
        # and LL128 trade bandwidth for latency): their β is at least its β
        floor[0] = max(beta_floor, line(fixed, n).beta_s_per_byte)
    for cuts in itertools.combinations(range(2, n - 1), k - 1):
        bounds = (0, *cuts, n)
        if any(hi - lo < 2 for lo, hi in zip(bounds, bounds[1:])):
            continue
        if fixed is not None and bounds[-2] != fixed:
            continue
        lines = [line(lo, hi) for lo, hi in zip(bounds, bounds[1:])]
        err = float(np.sum(((envelope(lines, a, b, m) - t) / t) ** 2))
        if best is None or err < best[0]:
            best = (err, lines)
    if best is None:
        return [line(0, n)]
    return best[1]
