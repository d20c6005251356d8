"""``oracle fit network``: logs and base system in, the fit and the file to write out.

Reads nccl-tests or OSU micro-benchmark logs (:mod:`oracle.load.benchlogs`), fits the
ring model of docs/cost-model.md per measured span (:mod:`oracle.compute.calibration.fit`), checks
the fit against ``--max-median-error`` and builds the YAML to write: with a base system a
complete system file (the base with its ``network:`` replaced by the fitted levels),
without one only the ``network:`` list (its outermost level then covers only the largest
measured span).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field


@dataclass(frozen=True)
class NetworkRequest:
    logs: tuple[str, ...]
    system: str | None = None
    operation: str | None = None
    gpus: tuple = ()  # (file or "", count) pairs of --gpus
    nodes: tuple = ()  # (file or "", count) pairs of --nodes
    gpus_per_node: int | None = None
    min_bytes: int | None = None
    max_bytes: int | None = None
    bw_fraction: float | None = None  # None: not given (the ring model's n½ rule at 0.5)
    in_place: bool = False
    protocols: int = 1
    collectives: str = "alpha-beta"
    max_median_error: float | None = None
    max_bandwidth_GB_per_s: float | None = None  # NCCL model fits: no inter-node line faster (the NICs)
    fit_protocols: tuple[str, ...] = ()  # NCCL model fits: the protocols fitted (empty: all)
    output: str | None = None  # None: nothing to write
    name: str | None = None
    source: str | None = None
    command: str = ""  # the command line, for the written file's header


@dataclass(frozen=True)
class NetworkJob:
    result: object  # compute.fit.NetworkFit; None for an NCCL model fit (``nccl``)
    failure: str | None = None  # --max-median-error exceeded: the message (nothing is written)
    text: str | None = None  # the YAML to write
    parsed: tuple = field(default=(), repr=False)
    nccl: object = None  # compute.nccl_fit.SystemFit: the base system's collectives are nccl (issue 25)
    warnings: tuple[str, ...] = ()


def fit_network_logs(req: NetworkRequest) -> NetworkJob:
    """Load, fit, check and (with ``req.output``) build the file to write."""
    from oracle.compute.calibration.fit import (
        FitOptions,
        checked_logs,
        fit_network,
        median_error_failures,
    )
    from oracle.load.benchlogs import load_benchlog

    base = _base_system(req.system) if req.system else None
    per_node = req.gpus_per_node or (base.system.gpus_per_node if base else None)
    gpus_default, gpus_per = per_file(req.gpus, list(req.logs), "--gpus")
    nodes_default, nodes_per = per_file(req.nodes, list(req.logs), "--nodes")
    parsed = tuple(
        load_benchlog(f, operation=req.operation, gpus=gpus_per.get(f, gpus_default),
                      nodes=nodes_per.get(f, nodes_default), gpus_per_node=per_node)
        for f in req.logs
    )  # fmt: skip
    if req.output is not None and str(req.output) != "-":  # a refused -o (an input log, a folder) before the fit
        from oracle.render.output import check_target

        check_target(req.output)
    bw_fraction = FitOptions.bw_fraction if req.bw_fraction is None else req.bw_fraction
    options = FitOptions(min_bytes=req.min_bytes, max_bytes=req.max_bytes, bw_fraction=bw_fraction,
                         in_place=req.in_place, protocols=req.protocols)  # fmt: skip
    where = {"gpus_per_node": base.system.gpus_per_node if base else req.gpus_per_node,
             "total_gpus": base.system.nodes * base.system.gpus_per_node if base else None}
    if _nccl_model(parsed, base):
        _ring_options_refused(req)
        checked_logs(parsed, options, **where)  # the checks of every fit; the ring model's range is not this fit's
        return _nccl_job(req, parsed, base, _nccl_fit(parsed, base, req))
    for given, flag in ((req.max_bandwidth_GB_per_s, "--max-bandwidth-GB-per-s"), (req.fit_protocols, "--fit-protocol")):
        if given:
            from oracle.errors import OracleError

            raise OracleError("applies to NCCL's collective model, which this fit is not (the ring model's levels are"
                              " fitted per span)", path=flag,
                              hint="give a base system whose collectives are nccl (--system), and all-reduce logs")  # fmt: skip
    result = fit_network(list(parsed), options, **where)
    if req.max_median_error is not None:
        bad = median_error_failures(result, req.max_median_error)
        if bad:
            failure = (f"median |rel. error| over messages >= 1 MiB above {100 * req.max_median_error:g}%: "
                       + "; ".join(bad) + (" (nothing written)" if req.output else ""))  # fmt: skip
            return NetworkJob(result, failure=failure, parsed=parsed, warnings=result.warnings)
    text = _written(req, result, parsed, base) if req.output is not None else None
    return NetworkJob(result, text=text, parsed=parsed, warnings=result.warnings)


def _nccl_model(parsed, base) -> bool:
    """NCCL's collective model is fitted: the base system's collectives are ``nccl`` and every log is an all-reduce."""
    from oracle.vocabulary import NCCL

    return (base is not None and base.system.collective_algorithm == NCCL
            and all(lg.operation == "allreduce" for lg in parsed))  # fmt: skip


def _ring_options_refused(req: NetworkRequest) -> None:
    """The ring model's fit range and lines (--bw-fraction, --protocols) given to an NCCL
    model fit, which fits every size (within --min-bytes/--max-bytes) to NCCL's protocols: one error."""
    from oracle.errors import OracleError

    for given, flag in ((req.bw_fraction is not None, "--bw-fraction"), (req.protocols != 1, "--protocols")):
        if given:
            raise OracleError("applies to the ring model's fit, which this fit is not (NCCL's collective model: the base"
                              " system's collectives are nccl, every log an all-reduce; it fits every size to NCCL's"
                              " protocols)", path=flag,
                              hint="drop it; --min-bytes/--max-bytes bound the sizes fitted")  # fmt: skip


def _nccl_fit(parsed, base, req: NetworkRequest):
    """NCCL's collective model fitted to the logs (compute/calibration/nccl_fit.py), within
    --min-bytes/--max-bytes.  With ``--max-bandwidth-GB-per-s`` no inter-node line is faster
    (a floor on its β): the node's NICs bound every protocol, which logs of large messages
    alone do not pin down; with ``--fit-protocol`` only those lines are fitted
    (compute/calibration/nccl_fit.fit_system)."""
    from oracle.compute.calibration.nccl_fit import fit_system, log_nodes
    from oracle.compute.nccl import PROTOCOLS

    gbps = req.max_bandwidth_GB_per_s
    if gbps is not None and all(log_nodes(lg, base.system)[0] == 1 for lg in parsed):
        from oracle.errors import OracleError

        raise OracleError("bounds the lines across nodes, and no log crosses a node (nothing fits them)",
                          path="--max-bandwidth-GB-per-s", hint="add logs of two nodes or more, or drop the option")  # fmt: skip
    floors = None if gbps is None else {("inter", p): 1.0 / (gbps * 1e9) for p in PROTOCOLS}
    protocols = req.fit_protocols
    fitted = tuple(p for p in PROTOCOLS if p in protocols or p == "Simple") if protocols else PROTOCOLS
    return fit_system(parsed, base.system, floors=floors, in_place=req.in_place, fitted=fitted,
                      sizes=(req.min_bytes, req.max_bytes))  # fmt: skip


def _nccl_job(req: NetworkRequest, parsed, base: _Base, nccl) -> NetworkJob:
    """The job of an NCCL fit: checked per log over its sizes, the base's levels refitted."""
    from oracle.render import fit as rf
    from oracle.render import nccl_fit as rn

    if req.max_median_error is not None:
        bad = [f"{le.log.file}: {100 * le.median:.1f}%" for le in nccl.logs if le.median > req.max_median_error]
        if bad:
            failure = (f"median |rel. error| of the NCCL model above {100 * req.max_median_error:g}%: "
                       + "; ".join(bad) + (" (nothing written)" if req.output else ""))  # fmt: skip
            return NetworkJob(None, failure=failure, parsed=parsed, nccl=nccl)
    if req.output is None:
        return NetworkJob(None, parsed=parsed, nccl=nccl)
    doc = rf.plain(base.doc)
    from oracle.compute.nccl import node_gpus

    network = rn.network_yaml(doc["network"], node_gpus(base.system), nccl)
    return NetworkJob(None, text=_written(req, None, parsed, base, network, rn.header_lines(nccl)),
                      parsed=parsed, nccl=nccl)  # fmt: skip


@dataclass(frozen=True)
class _Base:
    doc: dict
    system: object  # load.system.System
    label: str


def _base_system(system: str) -> _Base:
    from oracle.load.system import parse_system
    from oracle.load.yamlfile import load_yaml
    from oracle.resources import resolve

    path = resolve("systems", system)
    doc = load_yaml(path, "system file")
    return _Base(doc, parse_system(doc, str(path)), shipped_label(path, system))


def _written(req: NetworkRequest, result, parsed, base: _Base | None, network: str | None = None,
             model_lines: list[str] | None = None) -> str:  # fmt: skip
    from oracle.render import fit as rf

    info = rf.logs_provenance(parsed)
    date = datetime.date.today().isoformat()
    if base is None:
        return rf.header(result, req.command, date, info, req.source, None) + rf.network_yaml(result)
    s = base.system
    head = rf.header(result, req.command, date, info, req.source, f"{s.name} ({base.label})", model_lines)
    new_source = (
        f"{s.name} as in {base.label} (see its sources) with its network levels fitted by"
        " `oracle fit network` to " + (req.source or ", ".join(log.file for log in parsed)) + "."
    )
    if network is None:
        _domain_level(result.levels, s)
    tables = rf.tables_section(parsed, req.in_place) if req.collectives == "table" else None
    text = rf.system_yaml(base.doc, result, head, req.name or f"{s.name} (fitted network)", new_source, network, tables)
    check_loads(text, str(req.output))
    return text


def _domain_level(levels, system) -> None:
    """A ring fit's levels replace the base's, and one must end at the base's NVLink domain
    (load/interconnect.py): only a log inside one domain gives that level."""
    from oracle.errors import OracleError

    domain = system.interconnect.nvlink_domain_gpus
    if domain is None or any(lv.max_gpus == domain for lv in levels):
        return
    ends = ", ".join(f"{lv.name} up to {lv.max_gpus}" for lv in levels)
    raise OracleError(f"the fitted levels ({ends} GPUs) replace the base system's, and none ends at its"
                      f" {domain}-GPU NVLink domain (interconnect.nvlink_domain_gpus): collectives inside it would"
                      " take a network level's line; nothing written", path="--output",
                      hint=f"add a log of a collective inside one NVLink domain ({domain} GPUs)")  # fmt: skip


def per_file(values, logs: list[str], option: str) -> tuple[int | None, dict[str, int]]:
    """Split --gpus/--nodes values into a default and per-file counts."""
    from pathlib import Path

    from oracle.errors import OracleError

    default = None
    per: dict[str, int] = {}
    resolved = {str(Path(f).resolve()): f for f in logs}
    for file, n in values:
        if not file:
            if default is not None and default != n:
                raise OracleError(f"{option} given twice without a file ({default} and {n})", path=option)
            default = n
            continue
        target = file if file in logs else resolved.get(str(Path(file).resolve()))
        if target is None:
            raise OracleError(f"{option} {file}={n}: '{file}' is not one of the logs given", path=option)
        per[target] = n
    return default, per


def shipped_label(path, given: str) -> str:
    """How to name the base system in provenance: 'systems/abci.yaml' for a shipped one
    (not this machine's absolute path), else the path as the user gave it."""
    from pathlib import Path

    from oracle.resources import shipped_name

    return f"systems/{Path(path).name}" if shipped_name("systems", path) else given


def check_loads(text: str, name: str) -> None:
    """The written system must load with the system loader (a failure here is a bug)."""
    import yaml

    from oracle.load.system import parse_system

    parse_system(yaml.safe_load(text), name)
