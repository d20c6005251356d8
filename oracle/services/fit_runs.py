"""``oracle fit runs``: measured training runs in, a calibrated system file out.

:func:`fit_runs` does it all: :func:`select_runs` loads the runs, keeps those ``--where`` selects and says which were
measured on another system than the base; :func:`calibrate_runs` inverts the cost model
on them (:mod:`oracle.compute.calibration.calibrate`); :func:`calibrated_system` writes the result
into the base system's document, recording the runs each number comes from.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from oracle.textsafe import yaml_comments


@dataclass(frozen=True)
class RunsRequest:
    runs: str
    system: str
    kind: str  # network, input, compute or all
    where: dict
    overlay: str | None = None
    name: str | None = None
    output: str | None = None
    command: str = ""  # the command line, for the written file's header
    # the command's projection options as compute/options.Flags.parse takes them, ``stack`` (issue 25)
    # among them; a run's stack and option columns come first (issue 26)
    flags: dict | None = None


@dataclass(frozen=True)
class Selection:
    chosen: list
    base_path: Path
    overlay: dict | None  # the --overlay mapping
    warnings: tuple[str, ...]  # runs measured on another system


@dataclass(frozen=True)
class FitRuns:
    """What ``oracle fit runs`` computed: the calibration and the system to write, or
    (``--calibrate compute``) the scaled profile, its factor and evidence."""

    selected: int  # runs the --where filter kept
    calibration: object | None = None
    system_text: str | None = None  # with -o and something identified
    profile: tuple | None = None  # (profile, factor, evidence, stack text) of --calibrate compute
    infeasible: tuple = ()  # calibrate.SetAside: selected runs the model finds infeasible, left out


def fit_runs(req: RunsRequest, warn) -> FitRuns:
    """The whole of ``oracle fit runs`` but the printing: select the runs (``warn`` gets
    the runs measured on another description of the base), leave out those the model finds
    infeasible (an error where none is left), then calibrate."""
    sel = select_runs(req)
    for w in sel.warnings:
        warn(w)
    pairs, aside = feasible_pairs(req, sel)
    if req.kind == "compute":  # issue 13: a profile, not a system
        from oracle.services.fit_compute import calibrate_compute

        profile = calibrate_compute(req.runs, [r for r, _ in pairs], str(sel.base_path), req.flags or {})
        return FitRuns(len(sel.chosen), profile=profile, infeasible=aside)
    cal = calibrate_runs(req, pairs)
    # issue 26: an unphysical system is not written (the command refuses it)
    ok = req.output and cal.evidence and not cal.unphysical
    text = calibrated_system(req, sel, cal, pairs, aside) if ok else None
    if text is not None:
        for w in _unrecorded(req, sel.base_path):
            warn(w)
    return FitRuns(len(sel.chosen), cal, text, infeasible=aside)


def shipped_stack(text) -> str | None:
    """The shipped stack's name ``text`` names (its own, an alias, other case; "none" is
    none), else None (a file of one's own, which a written system does not record)."""
    from oracle.errors import OracleError
    from oracle.resources import resolve, shipped_name
    from oracle.vocabulary import NO_STACK

    if not isinstance(text, str) or not text:
        return None
    if text == NO_STACK:
        return NO_STACK
    try:
        return shipped_name("stacks", resolve("stacks", text))
    except OracleError:
        return None


def _unrecorded(req: RunsRequest, base_path) -> list[str]:
    """What the written system cannot hold of the stack its runs were inverted under: a
    stack given as a file (it keeps the base's ``stack:``), and the options given over the
    stack it records (its own, else the base's): one warning, to give them again."""
    from oracle.compute.options import STACK_KEYWORDS, Flags
    from oracle.compute.stack import given_over_stack
    from oracle.load import load_stack, load_system
    from oracle.vocabulary import NO_STACK

    flags = req.flags or {}
    named = flags.get("stack")
    stack = shipped_stack(named)
    if named and stack is None:
        return [f"{req.output}: records the base system's stack, not --stack {named} (a file of its own): give it"
                " again when projecting with this system"]  # fmt: skip
    if not named:
        stack = shipped_stack(load_system(str(base_path)).stack)
    if stack in (None, NO_STACK):
        return []
    given = {k: flags[k] for k in STACK_KEYWORDS if flags.get(k) is not None}
    over = given_over_stack(Flags.parse(stack=load_stack(stack), **given).options) if given else []
    if not over:
        return []
    text = ", ".join(f"{flag} {mine}" for flag, mine, _ in over)
    return [f"{req.output}: records stack {stack}, not {text} (given over it): give {'them' if len(over) > 1 else 'it'}"
            f" again when projecting with this system"]


def select_runs(req: RunsRequest) -> Selection:
    from oracle.compute.strategies import names
    from oracle.errors import OracleError
    from oracle.load import load_system
    from oracle.load.runs import load_runs
    from oracle.load.yamlfile import load_yaml
    from oracle.render.fit import plain
    from oracle.resources import resolve

    measured = load_runs(req.runs, names())
    extra = plain(load_yaml(req.overlay, "YAML overlay file")) if req.overlay else None  # fail before the work
    chosen = [r for r in measured if all(r.get(k) in v for k, v in req.where.items())]
    if not chosen:
        raise OracleError("no run matches the --where filter", file=req.runs)
    base_path = resolve("systems", req.system)
    load_system(str(base_path))  # a bad base system is the error, before any warning
    warnings = _other_systems(chosen, base_path, req.runs) + clash_warnings(chosen, req.flags or {}, req.runs)
    warnings += _contradicting(req, chosen)
    return Selection(chosen, base_path, extra, tuple(warnings))


def _context(inputs, run, base_path, runs_file: str):
    """The run's context on the base system, an error in one of its cells pointed at its row."""
    from oracle.api import point_at_row
    from oracle.errors import OracleError

    try:
        return inputs.context(run.model, str(base_path), run.profile, run)
    except OracleError as exc:
        point_at_row(exc, run, runs_file)
        raise


def feasible_pairs(req: RunsRequest, sel: Selection) -> tuple[list, tuple]:
    """(the (run, context) pairs of the selected runs the model finds feasible on the base
    system, the SetAside others): a run it says cannot run is not fitted, as compare does not
    score it; none left is an error naming them and their limits."""
    from oracle.api import Inputs
    from oracle.compute.calibration.calibrate import feasible_runs, none_feasible

    inputs = Inputs(**(req.flags or {}))
    pairs, aside = feasible_runs([(r, _context(inputs, r, sel.base_path, req.runs)) for r in sel.chosen])
    if not pairs:
        raise none_feasible(aside, "selected", "fit", file=req.runs,
                            hint="select runs the model can project with --where (oracle predict shows a"
                            " configuration's limits)")  # fmt: skip
    return pairs, aside


def calibrate_runs(req: RunsRequest, pairs: list):
    """The Calibration of ``req.kind`` (network, input or all) from the (run, context) pairs."""
    from oracle.compute.calibration.calibrate import calibrate

    if req.kind == "all":
        from oracle.compute.calibration.calibrate_all import calibrate_all

        return calibrate_all(pairs)
    return calibrate(req.kind, pairs)


def _contradicting(req: RunsRequest, chosen: list) -> list[str]:
    """Two runs of one configuration 2x apart (issue 26): an error where they would be
    written as anchors (``--calibrate all``), before any work; else warnings."""
    from oracle.compute.calibration.anchor import contradictions
    from oracle.errors import OracleError

    clash = contradictions(chosen)
    if clash and req.kind == "all":
        raise OracleError(clash[0], file=req.runs, hint="keep one of them with --where (e.g. --where line=...)")
    return [f"{req.runs}: {text}" for text in clash]


def network_calibrated(cal) -> bool:
    """Whether a calibration has a β for any level (the written network changes)."""
    return any(v is not None for v in (cal.beta_intra, cal.beta_inter)) or bool(cal.beta_levels)


def _state_algorithm(doc: dict, pairs) -> None:
    """A network calibrated through one all-reduce formula keeps it: where the base file
    states no algorithm, the written one states the runs' (a stack's NCCL would otherwise
    choose another on the calibrated values, compute/stack.stack_system); the base's
    ``tree_beyond_gpus`` goes (the levels now hold the runs' calibration)."""
    algorithms = {ctx.algorithm for _, ctx in pairs}
    collectives = {k: v for k, v in (doc.get("collectives") or {}).items() if k != "tree_beyond_gpus"}
    if len(algorithms) == 1 and "algorithm" not in collectives:
        collectives = {**collectives, "algorithm": algorithms.pop()}
    if collectives or "collectives" in doc:  # the runs calibrated the levels through the ring, at their own counts:
        doc["collectives"] = collectives     # what the logs covered (tree_beyond_gpus) no longer says what they hold


def calibrated_system(req: RunsRequest, sel: Selection, cal, pairs=(), aside=()) -> str:
    """The base system's YAML with the calibrated parameters and their provenance."""
    import yaml

    from oracle.compute.calibration.calibrate import stacks_text
    from oracle.errors import OracleError
    from oracle.load.yamlfile import load_yaml
    from oracle.render.fit import plain
    from oracle.services.fit_network import check_loads

    doc = plain(load_yaml(sel.base_path, "system file"))
    base_name = doc.get("name", "system")
    doc["name"] = req.name or f"{base_name} (calibrated)"
    doc.pop("use_for", None)  # the base's purpose is not the calibrated machine's (an --overlay may say)
    doc.pop("models", None)  # issue 26: fitted against the shared values this calibration changes
    given = (req.flags or {}).get("stack")
    stack = shipped_stack(given)
    if stack is not None:
        # issue 25: the written system projects under the stack its runs were inverted under
        doc["stack"] = {"name": stack, "source": f"the stack `oracle fit runs --stack {given}` fitted these runs under"}
    base_source = str(doc.get("source", "")).rstrip(". ")
    if req.kind == "network":
        set_network(doc, cal, base_name, req.runs)
        _state_algorithm(doc, pairs)
    if req.kind == "input" and any(v is not None for v in (cal.loader_rate, cal.node_rate, cal.leader_rate)):
        set_input(doc, cal, req.kind, req.runs)
    if req.kind == "all":
        from oracle.services.fit_anchors import anchor_entries
        from oracle.services.fit_models import model_entries, write_calibration

        write_calibration(doc, cal, base_name, req.runs)
        if network_calibrated(cal):
            _state_algorithm(doc, pairs)
        models, _ = model_entries(doc, cal, list(pairs), req.runs)  # issue 26: a model the shared fit leaves off
        if models:
            doc["models"] = models
        doc["anchors"] = anchor_entries(list(pairs), req.flags or {}, req.runs)  # issue 26
    used = sorted({e.line for e in cal.evidence})
    under = f" under {stacks_text(cal.stacks)}" if cal.stacks else ""  # the stack the runs were inverted under
    doc["source"] = (
        f"{base_source}. Then {req.kind} calibrated by `oracle fit runs` on {req.runs}"
        f" lines {', '.join(map(str, used))}{under} (see the sources below)"
    )
    if req.overlay:
        doc["source"] += f"; implementation facts from {req.overlay}"
        assert sel.overlay is not None
        for key, value in sel.overlay.items():
            doc[key] = {**doc[key], **value} if isinstance(value, dict) and isinstance(doc.get(key), dict) else value
    head = _header(req, doc["name"], base_name, cal, aside)
    text = "\n".join(yaml_comments(head)) + "\n" + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
    try:
        check_loads(text, str(req.output))
    except OracleError as exc:
        if not req.overlay:
            raise
        # the base system loaded and the calibration is computed: the overlay broke it
        raise OracleError(f"merged into the system, {exc.message}", file=req.overlay, path=exc.path,
                          hint=exc.hint) from None
    return text


def _header(req: RunsRequest, name: str, base_name: str, cal, aside) -> list[str]:
    """The written system's header lines: what it is, the command, the stack the runs were
    inverted under, the evidence per run and the runs left out (infeasible in the model)."""
    from oracle.compute.calibration.calibrate import stacks_text
    from oracle.render.fit import fmt_param

    head = [
        f"{name}: {base_name} calibrated from measured training runs (earlier calibration steps are in the source fields).",
        f"Generated by `{req.command}`",
        f"on {datetime.date.today().isoformat()}. Do not edit by hand; regenerate instead.",
        *([f"The runs were inverted under {stacks_text(cal.stacks)}."] if cal.stacks else []),
        "Evidence (run -> parameter):",
    ]
    head += [f"  {req.runs}:{e.line} {e.run}: {e.parameter} = {fmt_param(e.parameter, e.value)} ({e.note})"
             for e in cal.evidence]  # fmt: skip
    if aside:
        head.append("Left out of the fit (infeasible in the model):")
        head += [f"  {req.runs}:{a.line} {a.run}: {a.reason}" for a in aside]
    return head


def set_compute(doc: dict, cal, runs: str) -> None:
    """implementation.compute_factors: each model's fitted factor, with its runs."""
    if not cal.compute_factors:
        return
    impl = dict(doc.get("implementation") or {})
    impl["compute_factors"] = {**dict(impl.get("compute_factors") or {}),
                               **{m: float(f"{k:.6g}") for m, k in cal.compute_factors}}  # fmt: skip
    if cal.compute_batches:  # issue 26: where the batch curve starts
        impl["compute_samples_per_gpu"] = {**dict(impl.get("compute_samples_per_gpu") or {}),
                                           **{m: float(f"{b:.6g}") for m, b in cal.compute_batches}}  # fmt: skip
    note = f"compute_factors fitted by `oracle fit runs --calibrate all` on {runs} lines {_lines(cal, 'compute_factor')}"
    impl["source"] = f"{impl['source']}; {note}" if impl.get("source") else note
    doc["implementation"] = impl


def _lines(cal, parameter: str) -> str:
    return ", ".join(str(x) for x in cal.lines_for(parameter))


def set_network(doc: dict, cal, base_name: str, runs: str) -> None:
    """β per level into the levels (protocol lines scaled alike): a level its runs span
    gets theirs, another the nearest calibrated level's (compute/calibration/calibrate_all.level_betas)."""
    from oracle.compute.calibration.calibrate_all import level_betas
    from oracle.compute.nccl import node_gpus
    from oracle.load.system import parse_system

    system = parse_system(doc, "system")
    betas = level_betas(system, cal.beta_intra, cal.beta_inter, cal.beta_levels)
    for level, beta in zip(doc["network"], betas):
        inside = level["max_gpus"] <= node_gpus(system)  # an NVLink domain across hosts is one node
        if beta is None:
            continue
        old = level.pop("bandwidth_GB_per_s", None)
        old = 1.0 / (old * 1e9) if old else level.get("beta_s_per_byte")
        level["beta_s_per_byte"] = float(f"{beta:.6g}")
        # the transport is slower or faster as a whole: its protocol lines by as much
        for pr in level.get("protocols") or []:
            pr_beta = pr.pop("bandwidth_GB_per_s", None)
            pr_beta = 1.0 / (pr_beta * 1e9) if pr_beta else pr["beta_s_per_byte"]
            pr["beta_s_per_byte"] = float(f"{pr_beta * beta / old:.6g}")
        which = "inside a node" if inside else "across nodes"
        own = [str(e.line) for e in cal.evidence if e.level == level["name"] and e.parameter.startswith("beta")]
        spans = f"lines {', '.join(own)}" if own else (
            f"lines {_lines(cal, 'beta_intra' if inside else 'beta_inter')}, whose spans are on another level"
            " (no run spans this one)")  # fmt: skip
        level["basis"] = "calibrated"
        level["source"] = (
            f"α: {base_name}. β {which} ({1 / beta / 1e9:.3g} GB/s): calibrated by `oracle fit runs`"
            f" on {runs} {spans} (data-parallel runs)"
        )


def set_input(doc: dict, cal, kind: str, runs: str) -> None:
    """Loader, node and leader rates into the input section, with their runs."""
    section = dict(doc.get("input") or {})
    earlier = section.get("source")
    if cal.loader_rate is not None:
        section["loader_samples_per_s"] = float(f"{cal.loader_rate:.6g}")
    if cal.node_rate is not None:
        section["node_samples_per_s"] = float(f"{cal.node_rate:.6g}")
    if cal.leader_rate is not None:
        section["leader_samples_per_s"] = float(f"{cal.leader_rate:.6g}")
    section.setdefault("overlap", True)
    found = [
        f"{label} from line{'s' if ',' in _lines(cal, key) else ''} {_lines(cal, key)}"
        for label, key in (("loader rate", "loader_rate"), ("node rate", "node_rate"),
                           ("leader rate", "leader_rate"))
        if _lines(cal, key)
    ]  # fmt: skip
    section["source"] = (
        f"calibrated by `oracle fit runs --calibrate {kind}` on {runs}: {', '.join(found)}"
        " (input-bound runs, loaders prefetching)"
    )
    if earlier:  # chained calibrations keep every step's provenance
        section["source"] = f"{earlier}; then {section['source']}"
    doc["input"] = section


def _other_systems(chosen, base_path, runs: str) -> list[str]:
    """Runs measured on another description of the base's machine (the same GPUs per
    node, GPU peaks within 10%, e.g. ``abci`` for ``abci-chainermnx``) calibrate it, with
    a warning naming the systems and lines (issue 17); runs of another machine are an
    error (issue 14: a V100 run says nothing about an A100 system's network)."""
    from oracle.errors import OracleError
    from oracle.load import load_system

    base = load_system(str(base_path))
    kind: dict[str, object] = {}  # system name -> "base", "same machine" or its System (another machine)
    other: dict[str, list[int]] = {}
    for r in chosen:
        if r.system not in kind:
            kind[r.system] = _machine_of(r.system, base, base_path)
        theirs = kind[r.system]
        if theirs == "base":
            continue
        if theirs != "same machine":
            raise OracleError(
                f"column 'system': '{r.system}' is another machine ({theirs.gpu_model}, {theirs.gpus_per_node}"
                f" per node) than the base system {base_path} ({base.gpu_model}, {base.gpus_per_node} per node);"
                " its runs cannot calibrate it",
                file=runs,
                line=r.line,
                hint=f"pass --system {r.system}, or select the base's runs with --where system=...",
            )
        other.setdefault(r.system, []).append(r.line)
    return [
        f"{runs} lines {ranges(lines)} were measured on '{name}', not on the base"
        f" system {base_path}: their numbers calibrate it all the same"
        for name, lines in other.items()
    ]


def _machine_of(name: str, base, base_path):
    """"base" (the base's file), "same machine" (another description of it, or a name
    that is not a shipped system: the user's word is taken) or the other machine's System
    (each system of a runs file is read once)."""
    from oracle.errors import OracleError
    from oracle.load import load_system
    from oracle.resources import resolve

    try:
        path = resolve("systems", name)
    except OracleError:
        return "same machine"
    if path.resolve() == Path(base_path).resolve():
        return "base"
    theirs = load_system(str(path))
    return theirs if _other_machine(theirs, base) else "same machine"


def _other_machine(a, b) -> bool:
    """Two system files describe different machines: other GPUs per node (the network
    levels cannot correspond), or GPUs whose peak FLOP/s differ by more than 10% (another
    generation; GPU names are free text, so they are not compared)."""
    if a.gpus_per_node != b.gpus_per_node:
        return True
    pa, pb = a.gpu_peak_flops, b.gpu_peak_flops
    return bool(pa and pb and abs(pa - pb) > 0.1 * max(pa, pb))


def clash_warnings(runs: list, flags: dict, file: str) -> list[str]:
    """One warning per option or stack column whose rows differ from the command's
    option (issue 26): each row is projected with its own column."""
    from oracle.compute.options import option_clashes

    return [f"{file} line{'s' if len(lines) > 1 else ''} {ranges(lines)}: column '{col}' is {value}, the command's"
            f" {'--' + col.replace('_', '-')} {mine}; each row is projected with its own column"
            for col, value, mine, lines in option_clashes(runs, flags)]  # fmt: skip


def ranges(lines: list[int]) -> str:
    """2, 3, 4, 7 -> '2-4, 7'."""
    out: list[str] = []
    start = prev = lines[0]
    for n in [*lines[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(f"{start}-{prev}" if prev > start else str(start))
        if n is not None:
            start = prev = n
    return ", ".join(out)
