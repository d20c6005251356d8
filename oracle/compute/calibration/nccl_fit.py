"""Fit the per-protocol lines of NCCL's collective model (compute/nccl.py) to all-reduce logs.

One set of lines -- per protocol (LL, LL128, Simple) an α and a β inside a node and across
nodes -- for every log at once, whatever its node count: the model, not a level per span
(compute/calibration/fit.py), carries the node counts.  Each measured size is explained by the
candidate (ring or tree, protocol) the model finds cheapest, as NCCL's tuner picks one,
and its time is linear in the lines' α and β once that candidate and the link bounding its
bandwidth are known.  So the fit alternates: assign each size its cheapest candidate, then
solve the non-negative least squares of the relative error (Lawson & Hanson, "Solving
Least Squares Problems", 1974, ch. 23), reweighted towards the median (iteratively
reweighted least squares for the absolute relative error, weights 1/max(|r|, 2%)); it
stops when no assignment changes and keeps the best sum of absolute relative errors.
Lines given in ``fixed`` (e.g. a nominal NVSwitch level when only multi-node logs exist)
are not fitted.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from oracle.compute import nccl
from oracle.compute.nccl import (
    PROTOCOLS,
    Offers,
    correction,
    protocol_kind,
    protocols_for,
    term_time,
    terms,
)
from oracle.errors import OracleError

ALPHA_FLOOR_S = 1e-9  # 1 ns: far below any real per-step latency (as compute/calibration/fit.py)
BETA_FLOOR = 1e-15  # 1 PB/s: above any real link


@dataclass(frozen=True)
class Sample:
    p: int  # GPUs
    n: int  # nodes
    g: int  # GPUs per node
    m: float  # bytes
    t: float  # seconds


def log_nodes(log, system=None) -> tuple[int, int]:
    """(n, g): the NCCL nodes of a BenchLog and its GPUs on each: the log's hosts or, with a
    ``system`` whose NVLink domain spans hosts, its domains (nccl.nccl_nodes: 18 hosts of an
    NVL72 rack are one node of 72 GPUs); where the domain is one host, hosts with fewer GPUs
    than the system's stay nodes of their own (two 4-GPU hosts are not one 8-GPU node, and
    the network between them is measured as such).  A log over several domains that fills
    its last one partly (108 GPUs on NVL72) is refused: the lines across nodes are whole
    domains', and a partial domain reaches the network through fewer NICs, which the model
    does not tell apart (nccl.partial_domain; oracle predict takes it as fast as a full one
    and says so)."""
    n, g = log.nodes, log.gpus_per_node
    domain = nccl.node_gpus(system) if system is not None else g
    if system is not None and domain > system.gpus_per_node and n > 1:  # as nccl.nccl_nodes
        if domain % g:
            raise OracleError(f"{g} GPUs per host do not tile the system's NVLink domain of {domain} GPUs",
                              path=log.file, hint="give the log's GPUs per host (--gpus-per-node) as the system has them")  # fmt: skip
        if log.gpus > domain and log.gpus % domain:
            raise OracleError(f"{log.gpus} GPUs do not fill whole NVLink domains of {domain} GPUs (the system's NCCL"
                              f" nodes): {log.gpus // domain} x {domain} + {log.gpus % domain}", file=log.file,
                              hint="fit logs on whole domains: the lines across nodes are a full domain's, and a"
                              " partial one reaches the network through fewer NICs")  # fmt: skip
        hosts = domain // g
        n, g = -(-n // hosts), g * min(hosts, n)
    return n, g


def samples_of(log, in_place: bool = False, system=None, sizes: tuple = (None, None)) -> list[Sample]:
    """The all-reduce sizes of a BenchLog (out-of-place times unless ``in_place``) within
    ``sizes`` (smallest, largest; None: unbounded), on its NCCL nodes (:func:`log_nodes`)."""
    n, g = log_nodes(log, system)
    lo, hi = sizes
    out = [Sample(log.gpus, n, g, float(m), float(t)) for m, t in log.times(in_place)
           if (lo is None or m >= lo) and (hi is None or m <= hi)]  # fmt: skip
    if not out:
        bounds = [f">= {lo} B (--min-bytes)"] if lo is not None else []
        bounds += [f"<= {hi} B (--max-bytes)"] if hi is not None else []
        raise OracleError("no message size of the log " + " and ".join(bounds), file=log.file)
    return out


def _candidates(s: Sample, protocols, offers: Offers = Offers()):
    labels = protocols_for(tuple(protocols), s.n, offers.ll128_across)
    return terms(s.p, s.n, s.g, tuple((lb, protocol_kind(lb)) for lb in labels), offers)


def _choose(samples: list[Sample], lines: dict, protocols, offers: Offers = Offers()) -> tuple[np.ndarray, list]:
    """Model seconds of every sample and the candidate (Term) it takes, vectorised over the
    sizes of each layout."""
    out, used = np.zeros(len(samples)), [None] * len(samples)
    layouts: dict[tuple[int, int, int], list[int]] = {}
    for i, s in enumerate(samples):
        layouts.setdefault((s.p, s.n, s.g), []).append(i)
    for idx in layouts.values():
        cands = _candidates(samples[idx[0]], protocols, offers)
        m = np.array([samples[i].m for i in idx])
        times = np.stack([np.broadcast_to(term_time(c, lines, m), m.shape) for c in cands])
        best = times.argmin(axis=0)
        for j, i in enumerate(idx):
            out[i], used[i] = times[best[j], j], cands[best[j]]
    return out, used


def predict(samples: list[Sample], lines: dict, protocols=PROTOCOLS, offers: Offers = Offers()):
    """Model seconds of every sample and the label of the candidate it takes."""
    out, used = _choose(samples, lines, protocols, offers)
    return out, [c.label for c in used]


@functools.lru_cache(maxsize=4096)
def _correction(kind: str, m: float) -> float:
    return float(correction(kind, np.asarray(m)))


def nnls(a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """min ||a x - y|| subject to x >= 0 (Lawson & Hanson's active-set method)."""
    n = a.shape[1]
    x, passive = np.zeros(n), []
    for _ in range(3 * n + 10):
        grad = a.T @ (y - a @ x)
        free = [j for j in range(n) if j not in passive]
        if not free or max(grad[free]) <= 1e-12:
            break
        passive.append(free[int(np.argmax(grad[free]))])
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], y, rcond=None)[0]
            if min(z[passive]) > 0:
                x = z
                break
            step = min(x[j] / (x[j] - z[j]) for j in passive if z[j] <= 0)
            x = x + step * (z - x)
            passive = [j for j in passive if x[j] > 1e-18]
    return x


def _row(s: Sample, term, lines: dict, keys: dict, fixed: dict, floors: dict,
         tied: dict | None = None) -> tuple[np.ndarray, float]:  # fmt: skip
    """Coefficients of the free parameters in this sample's time (a β above its floor), and
    the fixed part; a ``tied`` line's α is fixed and its β a multiple of its level's Simple β."""
    tied = tied or {}
    row, const = np.zeros(len(keys)), term.const_s
    for where, c in term.latency:
        key = (where, term.protocol)
        if key in fixed or key in tied:
            const += c * (fixed[key][0] if key in fixed else tied[key][0])
        else:
            row[keys[(*key, "a")]] += c
    where, c = max(term.bandwidth, key=lambda wc: wc[1] * lines[(wc[0], term.protocol)][1])
    scale = s.m * c
    if term.correction is not None:
        scale /= _correction(term.correction, s.m)
    key = (where, term.protocol)
    if key in tied:
        key, scale = (where, "Simple"), scale * tied[key][1]
    if key in fixed:
        const += scale * fixed[key][1]
    else:
        const += scale * floors.get(key, 0.0)
        row[keys[(*key, "b")]] += scale
    return row, const


def _untie(lines: dict, tied: dict) -> dict:
    """``lines`` with every tied line at its α and its multiple of its level's Simple β."""
    return {**lines, **{k: (a, f * lines[(k[0], "Simple")][1]) for k, (a, f) in tied.items() if (k[0], "Simple") in lines}}


def fit_lines(samples: list[Sample], protocols=PROTOCOLS, fixed: dict | None = None, floors: dict | None = None,
              offers: Offers = Offers(), rounds: int = 40, tied: dict | None = None) -> dict:  # fmt: skip
    """Lines {(where, protocol): (α, β)} of the model for the samples (module doc).  ``fixed``:
    lines not fitted; ``tied``: {(where, protocol): (α, f)}, lines whose β is f x their level's
    Simple β; ``floors``: {(where, protocol): least β}, e.g. what the NICs allow;
    ``offers``: NVLS/CollNet candidates the system has (compute/nccl.offers).  The alternation
    is started from each of :data:`STARTS` and the best sum of relative errors kept: from
    NCCL's usual regimes alone it can settle where one protocol's line explains sizes another
    would (logs of large messages only leave LL and LL128 free)."""
    fixed, floors, tied = dict(fixed or {}), dict(floors or {}), dict(tied or {})
    wheres = ("intra", "inter") if any(s.n > 1 for s in samples) else ("intra",)
    keys = {(w, lb, ab): i for i, (w, lb, ab) in enumerate(
        (w, lb, ab) for w in wheres for lb in protocols for ab in "ab"
        if (w, lb) not in fixed and (w, lb) not in tied and _runs(w, lb, offers))}  # fmt: skip
    runs = [_descend(samples, [start(s, _candidates(s, protocols, offers), protocols) for s in samples],
                     protocols, keys, fixed, floors, offers, rounds, tied) for start in STARTS]  # fmt: skip
    return min(runs, key=lambda run: run[0])[1]


def _runs(where: str, label: str, offers: Offers) -> bool:
    """Whether a line is used: not an inter-node line of a protocol NCCL does not run across
    nodes (:func:`~oracle.compute.nccl.protocols_for`)."""
    return label in protocols_for((label,), 2 if where == "inter" else 1, offers.ll128_across)


def _descend(samples: list[Sample], assign: list, protocols, keys: dict, fixed: dict, floors: dict,
             offers: Offers, rounds: int, tied: dict | None = None) -> tuple[float, dict]:  # fmt: skip
    """Alternate solving the lines and choosing each size's cheapest candidate from the
    assignment ``assign``: (the best sum of |relative error|, its lines)."""
    start = {"intra": (1e-6, 1e-11), "inter": (1e-6, 1e-10)}  # the network slower than NVLink
    tied = tied or {}
    lines = _untie({(w, lb): fixed.get((w, lb), start[w]) for w in ("intra", "inter") for lb in protocols}, tied)
    t = np.array([s.t for s in samples])
    best: tuple[float, dict] | None = None
    stale = 0
    for _ in range(rounds):
        rows = [_row(s, term, lines, keys, fixed, floors, tied) for s, term in zip(samples, assign)]
        a = np.array([r for r, _ in rows]).reshape(len(samples), len(keys))
        y = t - np.array([c for _, c in rows])
        x = _irls(a, y, t)
        for (w, lb, ab), i in keys.items():
            al, be = lines[(w, lb)]
            beta = max(x[i] + floors.get((w, lb), 0.0), BETA_FLOOR)
            lines[(w, lb)] = (max(x[i], ALPHA_FLOOR_S), be) if ab == "a" else (al, beta)
        lines = _untie(lines, tied)
        pred, new = _choose(samples, lines, protocols, offers)
        score = float(np.sum(np.abs(pred - t) / t))
        if best is None or score < best[0]:
            best, stale = (score, dict(lines)), 0
        stale += 1
        if stale > 8 or [c.label for c in new] == [c.label for c in assign]:
            break
        assign = new
    assert best is not None
    return best


def _initial(s: Sample, cands, protocols):
    """Start: LL below 8 KiB, LL128 below 1 MiB, Simple above (NCCL's usual regimes); trees
    beyond two nodes."""
    want = "LL" if s.m < 8192 else "LL128" if s.m < 1 << 20 else "Simple"
    ran = [c.protocol for c in cands]  # the sample's protocols (not LL128 where it does not cross nodes)
    label = next((lb for lb in protocols if protocol_kind(lb) == want and lb in ran), protocols[-1])
    algo = "tree" if s.n > 2 else "ring"
    return next(c for c in cands if c.algorithm == algo and c.protocol == label)


def _simple_on(algorithm: str):
    """A start with every size on ``algorithm`` in Simple, where a candidate (else :func:`_initial`)."""

    def start(s: Sample, cands, protocols):
        label = next((lb for lb in protocols if protocol_kind(lb) == "Simple"), protocols[-1])
        return next((c for c in cands if c.algorithm == algorithm and c.protocol == label), None) or _initial(
            s, cands, protocols)

    return start


# the alternation's starts (fit_lines): NCCL's usual regimes, then every size in Simple on
# rings, on trees, on NVLS
STARTS = (_initial, _simple_on("ring"), _simple_on("tree"), _simple_on("nvls"))


def _irls(a: np.ndarray, y: np.ndarray, t: np.ndarray, rounds: int = 8, eps: float = 0.02) -> np.ndarray:
    """Non-negative fit of a·x ≈ y minimising Σ |a·x - y| / t (reweighted)."""
    w = 1.0 / t
    x = np.zeros(a.shape[1])
    for _ in range(rounds):
        x = nnls(a * w[:, None], y * w)
        r = np.abs(a @ x - y) / t
        w = 1.0 / t / np.sqrt(np.maximum(r, eps))
    return x


@dataclass(frozen=True)
class LogError:
    """How a fitted set of lines reproduces one log."""

    log: object  # records.BenchLog
    errors: np.ndarray  # (model - measured) / measured per size
    used: tuple[str, ...]  # the candidate (algorithm/protocol) per size
    sizes: tuple[float, ...] = ()  # bytes per size
    nodes: int = 0  # NCCL nodes (log_nodes: an NVL72 rack's 18 hosts are one)

    @property
    def median(self) -> float:
        return float(np.median(np.abs(self.errors)))

    @property
    def max(self) -> float:
        return float(np.abs(self.errors).max())


@dataclass(frozen=True)
class SystemFit:
    """Lines {(intra|inter, protocol): (α, β)} fitted to all-reduce logs, which of them were
    held at the base system's (``fixed``) or tied to their level's Simple line (``tied``),
    and each log's errors."""

    lines: dict
    fixed: frozenset
    logs: tuple[LogError, ...]
    tied: frozenset = frozenset()
    sizes: tuple = (None, None)  # the sizes fitted and checked: (smallest, largest), None unbounded

    @property
    def runaway(self) -> tuple[tuple[str, str], ...]:
        """The fitted lines at the β floor (1 PB/s): no size of the logs measured them."""
        free = (k for k in sorted(self.lines) if k not in self.fixed and k not in self.tied)
        return tuple(k for k in free if self.lines[k][1] <= BETA_FLOOR * (1 + 1e-9))


def log_errors(log, lines: dict, offer: Offers = Offers(), in_place: bool = False, system=None,
               sizes: tuple = (None, None)) -> LogError:  # fmt: skip
    samples = samples_of(log, in_place, system, sizes)
    pred, used = predict(samples, lines, offers=offer)
    t = np.array([s.t for s in samples])
    return LogError(log, (pred - t) / t, tuple(used), tuple(s.m for s in samples), samples[0].n)


def _level_lines(system, gpus: int) -> dict:
    """The base system's level for ``gpus`` GPUs: its lines by protocol name (nccl.link_lines)."""
    from oracle.compute.network import link

    return nccl.link_lines(link(system, gpus, "gradient_allreduce"))


def _lines_at(system, gpus: int, where: str) -> dict:
    """{(where, protocol): (α, β)} of the base system's level for ``gpus`` GPUs (compute/nccl.py,
    as its ``group_lines``): its own line Simple, its protocol lines by name, a protocol it
    lacks its Simple line."""
    own = _level_lines(system, gpus)
    return {(where, name): own.get(name, own["Simple"]) for name in PROTOCOLS}


def intra_lines(system) -> dict:
    """The lines {("intra", protocol): (α, β)} of the level one NCCL node's GPUs all-reduce over."""
    return _lines_at(system, nccl.node_gpus(system), "intra")


def _named_protocols(system, gpus: int) -> dict[str, set[str]]:
    """The protocols the base's levels inside one NCCL node and at ``gpus`` GPUs name."""
    return {where: set(_level_lines(system, g)) for where, g in (("intra", nccl.node_gpus(system)), ("inter", gpus))}


def base_lines(system, gpus: int) -> dict:
    """The base system's lines inside one NCCL node and across nodes at the level of ``gpus`` GPUs."""
    return {**intra_lines(system), **_lines_at(system, gpus, "inter")}


# tuning.cc: LL128's bus bandwidth is 0.92 of Simple's (its lines' β: Simple's / 0.92)
LL128_OF_SIMPLE = 0.92


def fit_system(logs, system=None, floors: dict | None = None, in_place: bool = False,
               fitted: tuple[str, ...] = PROTOCOLS, sizes: tuple = (None, None)) -> SystemFit:  # fmt: skip
    """Fit the lines to all-reduce ``logs`` (out-of-place times unless ``in_place``).  With a
    base ``system``: its NVLS/CollNet offers count, and when no log runs inside one node its
    intra-node lines are kept (no log measures them).  ``fitted``: the protocols whose lines
    are fitted (Simple always); logs of large messages only say nothing of NCCL's
    small-message protocols, so a protocol left out keeps the base system's line -- LL128
    its α, at 0.92 of the fitted Simple bandwidth (tuning.cc's LL128 factor) -- and stays a
    candidate, as in ``oracle predict``.  ``sizes``: the message sizes fitted and checked
    (smallest, largest; None unbounded: --min-bytes/--max-bytes)."""
    if "Simple" not in fitted or not set(fitted) <= set(PROTOCOLS):
        raise ValueError(f"fitted protocols {fitted}: Simple and any of {PROTOCOLS}")
    if set(fitted) != set(PROTOCOLS) and system is None:
        raise ValueError("a protocol not fitted keeps the base system's line: give the system")
    samples = [s for log in logs for s in samples_of(log, in_place, system, sizes)]
    offer = nccl.offers(system) if system is not None else Offers()
    fixed = intra_lines(system) if system is not None and all(s.n > 1 for s in samples) else {}
    tied: dict = {}
    wheres = ("intra", "inter") if any(s.n > 1 for s in samples) else ("intra",)
    if set(fitted) != set(PROTOCOLS):
        gpus = max(lg.gpus for lg in logs)
        base, named = base_lines(system, gpus), _named_protocols(system, gpus)
        for w in wheres:
            for proto in (p for p in ("LL", "LL128") if p not in fitted and (w, p) not in fixed and _runs(w, p, offer)):
                if proto not in named[w]:
                    raise OracleError(f"the base system's level {w}-node has no {proto} line to keep",
                                      path="--fit-protocol", hint=f"give that level a {proto} line in its protocols:"
                                      " (NCCL's constants, as systems/dgx-h100-superpod.yaml), or fit it too")  # fmt: skip
                if proto == "LL":
                    fixed[(w, "LL")] = base[(w, "LL")]
                elif (w, "Simple") not in fixed:
                    tied[(w, "LL128")] = (base[(w, "LL128")][0], 1.0 / LL128_OF_SIMPLE)
    lines = fit_lines(samples, fixed=fixed, floors=floors, offers=offer, tied=tied)
    lines = {k: v for k, v in lines.items() if _runs(*k, offer)}
    if all(s.n == 1 for s in samples):  # no log crosses a node: nothing fitted the lines across nodes
        lines = {k: v for k, v in lines.items() if k[0] == "intra"}
    errors = tuple(log_errors(log, lines, offer, in_place, system, sizes) for log in logs)
    return SystemFit(lines, frozenset(fixed), errors, frozenset(tied), sizes)
