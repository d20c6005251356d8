"""A sweep anchored on its system's stored anchors (issue 26; compute/calibration/anchor_points.py):
each anchor projected under the options it ran with, on the sweep's model, system and
profile."""

from __future__ import annotations


def anchored_sweep(points: list, req) -> list:
    """``points`` of ``req`` (api.SweepRequest) anchored on the system's anchors of its
    model (unchanged without one)."""
    from oracle.compute.calibration.anchor_points import anchor_points, anchor_run
    from oracle.compute.calibration.compare import compare_run
    from oracle.errors import OracleError

    system = req.system
    rows = []
    for i, anchor in enumerate(system.anchors):
        if anchor.model != req.model.name:
            continue
        try:
            rows.append(compare_run(anchor_run(anchor, i), _context(anchor, req)))
        except OracleError as exc:
            raise OracleError(exc.message, file=system.file, path=f"anchors[{i}]", hint=exc.hint) from None
    return anchor_points(points, rows, system.gpus_per_node) if rows else points


def _context(anchor, req):
    """The cost context of ``anchor``: its precision, stack (else the system file's;
    ``none``: no stack) and options on the request's model, system and profile."""
    from oracle.compute.calibration.compare import PRECISION_COLUMN, precision_key
    from oracle.compute.conversion import build_context
    from oracle.compute.options import Flags
    from oracle.compute.stack import stack_system
    from oracle.load import load_stack
    from oracle.vocabulary import NO_STACK

    precision, mixed = PRECISION_COLUMN[precision_key(anchor.precision)] if anchor.precision else (None, None)
    name = anchor.stack or req.system.stack  # a run without one ran under the file's (issue 25)
    stack = load_stack(name) if name and name != NO_STACK else None
    options = Flags.parse(**dict(anchor.options), stack=stack).resolve(req.profile, precision, mixed, system=req.system).options
    return build_context(req.model, stack_system(req.system, stack), req.profile, options)
