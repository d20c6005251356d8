"""Exact pruning of dominated distributions for Jia et al.'s node and edge eliminations
(compute/layerwise/graphsearch.py; ICML 2018, §5.2).

Distribution k of a layer v is *dominated* by an earlier one k' < k when, entry by entry,
choosing k' never costs more: its node costs (time and bytes) are no larger and so is
every incident edge's cost from (into) every neighbour distribution.  Every operation of
the eliminations is monotone — rounded sums and minima (IEEE 754 rounding is monotone) —
so the eliminated graphs keep the domination: a node elimination's min over v, an edge
elimination's sum and a leaf fold never make k cheaper than k'.  Since every argmin of the
search takes the first index, and k' comes first, k is then never chosen, and removing it
changes no minimum; the eliminations give the very same assignment on fewer distributions
(an elimination costs n_u·n_v·n_w).  The domination found on the full arrays holds for
any subset of allowed distributions as long as k' itself is allowed (checked per solve).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def dominance(
    node_parts: Sequence[np.ndarray], edges: Sequence[tuple[int, int]], mats: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (v, k', k), k' < k, with k' dominating k at node v (module docstring), as
    three arrays: node_parts are the (n x nd) node costs that the objective weighs with
    factors >= 0 (time, bytes); ``mats`` the (E x nd x nd) edge cost matrices."""
    n, nd = node_parts[0].shape
    lo, hi = np.triu_indices(nd, 1)  # lo < hi: lo may dominate hi
    incident: list[list[tuple[int, bool]]] = [[] for _ in range(n)]
    for e, (u, w) in enumerate(edges):
        incident[u].append((e, True))  # v is the producer: compare rows
        incident[w].append((e, False))  # v is the consumer: compare columns
    ok = np.ones((n, len(lo)), dtype=bool)
    for part in node_parts:
        ok &= part[:, lo] <= part[:, hi]
    found = []
    for v in range(n):
        kp, k = lo[ok[v]], hi[ok[v]]
        for e, rows in incident[v]:
            if not kp.size:
                break
            m = mats[e] if rows else mats[e].T  # rows: v's distributions
            # the neighbour at k or k' first (a cheap test that rejects most pairs)
            keep = (m[kp, k] <= m[k, k]) & (m[kp, kp] <= m[k, kp])
            kp, k = kp[keep], k[keep]
            keep = (m[kp] <= m[k]).all(axis=1)
            kp, k = kp[keep], k[keep]
        found.append((np.full(kp.size, v), kp, k))
    if not found:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    return tuple(np.concatenate(col) for col in zip(*found))  # type: ignore[return-value]


def prune(node: np.ndarray, pairs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """(n x nd) mask of the distributions to keep: allowed (finite cost) and not dominated
    by another allowed one."""
    v, kp, k = pairs
    allowed = np.isfinite(node)
    keep = allowed.copy()
    hit = allowed[v, kp]
    keep[v[hit], k[hit]] = False
    return keep
