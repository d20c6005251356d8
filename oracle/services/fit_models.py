"""The ``models:`` section ``oracle fit runs --calibrate all`` writes into a calibrated
system (issue 26; read back by load/model_systems.py): where the shared fit leaves a
model's calibration runs more than 5% off, that model's own calibration
(compute/calibration/anchor.per_model_calibrations), written as the sections it changes, so that
``oracle predict`` on the written system projects as ``oracle compare --calibrate-on``."""

from __future__ import annotations

import copy


def model_entries(doc: dict, cal, pairs: list, runs_file: str) -> tuple[dict, list[str]]:
    """({model name: the sections its own calibration changes in ``doc``}, a note per
    model); ``doc``: the shared calibration already written, ``cal`` its Calibration,
    ``pairs``: the (run, context) pairs it was fitted on."""
    from oracle.compute.calibration.anchor import per_model_calibrations
    from oracle.compute.calibration.calibrate_all import apply
    from oracle.load.model_systems import SECTIONS

    if not pairs:
        return {}, []
    shared = apply(pairs[0][1].system, cal)
    own, notes = per_model_calibrations(shared, pairs)
    names = {r.model: c.model.name for r, c in pairs}
    out: dict = {}
    for key, model_cal in own.items():
        mine = copy.deepcopy(doc)
        write_calibration(mine, model_cal, str(doc.get("name", "system")), runs_file)
        changed = {k: mine[k] for k in SECTIONS if k in mine and mine.get(k) != doc.get(k)}
        if changed:
            lines = sorted(r.line for r, _ in pairs if r.model == key)
            out[names[key]] = {"source": f"its own `oracle fit runs --calibrate all` on {runs_file} lines"
                                         f" {', '.join(map(str, lines))}: the shared fit left them over 5% off",
                               **changed}  # fmt: skip
    return out, notes


def write_calibration(doc: dict, cal, base_name: str, runs_file: str) -> None:
    """Everything ``cal`` (a ``--calibrate all`` Calibration) identified, into ``doc``."""
    from oracle.compute.calibration.calibrate_all import mechanisms
    from oracle.compute.calibration.calibrate_split import into_doc
    from oracle.services.fit_runs import network_calibrated, set_compute, set_input, set_network

    if network_calibrated(cal):
        set_network(doc, cal, base_name, runs_file)
    if any(v is not None for v in (cal.loader_rate, cal.node_rate, cal.leader_rate)):
        set_input(doc, cal, "all", runs_file)
    found = mechanisms(cal)
    into_doc(doc, found, {k: cal.lines_for(k) for k in found}, runs_file)
    set_compute(doc, cal, runs_file)
