"""Write a :class:`~oracle.model.Profile` as a profile YAML file (docs/file-formats.md), and the
summary ``oracle profile`` prints after measuring or estimating.

The YAML is written by hand so that its layout is fixed: header comments, the keys
that :func:`oracle.load.profile.parse_profile` reads, then one flow mapping per layer
(``conv1: {fw_s: 1.2345e-05, bw_s: 2.3456e-05, wu_s: 0.0000e+00}``).  Times carry
five significant digits.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from oracle.model import Profile
from oracle.textsafe import yaml_comments, yaml_quoted, yaml_scalar
from oracle.vocabulary import FP32, NO_STACK

_INT_META = ("batch", "threads", "peak_allocated_bytes")
_WIDTH = 88


def _time(value: float) -> str:
    return f"{value:.4e}"


def _string(key: str, value: str) -> list[str]:
    """``key: value`` as one line, or as a folded block when it is long."""
    one = f"{key}: {yaml_quoted(value)}"
    if len(one) <= _WIDTH or one != f'{key}: "{value}"':  # short, or holding escapes: one line
        return [one]
    # folded block: single spaces between words fold back exactly
    if "  " in value or "\n" in value or value != value.strip() or "\t" in value:
        return [one]
    lines = textwrap.wrap(value, width=_WIDTH - 2, break_long_words=False, break_on_hyphens=False)
    if " ".join(lines) != value:
        return [one]
    return [f"{key}: >-"] + [f"  {line}" for line in lines]


def profile_yaml(profile: Profile, header: Sequence[str] = ()) -> str:
    """The text of a profile file for ``profile`` (per-layer form)."""
    out = yaml_comments(header)
    out += _string("model", profile.model)
    out.append(f"kind: {profile.kind}")
    out += _string("device", profile.device)
    out += _string("framework", profile.framework)
    if profile.measured_samples_per_gpu is not None:
        out.append(f"measured_samples_per_gpu: {int(profile.measured_samples_per_gpu)}")
    if profile.precision != FP32:
        out.append(f"precision: {profile.precision}")
    if profile.stack:
        out += _string("stack", profile.stack)
    meta = dict(profile.meta)
    for key in ("batch", "threads", "date", "framework_version", "efficiency", "peak_allocated_bytes"):
        if key in meta:
            value = meta[key]
            out += [f"{key}: {int(value)}"] if key in _INT_META else _string(key, value)
    if profile.source:
        out += _string("source", profile.source)
    if "notes" in meta:
        out += _string("notes", meta["notes"])
    out.append(
        "layers:  # fw_s, bw_s: seconds per sample; wu_s: seconds per iteration"
        + ("; saved_bytes: bytes per sample saved for the backward (fp32)" if _has_saved(profile) else "")
    )
    for name, t in profile.layers:
        times = f"fw_s: {_time(t.fw_s)}, bw_s: {_time(t.bw_s)}, wu_s: {_time(t.wu_s)}"
        if t.saved_bytes is not None:
            times += f", saved_bytes: {t.saved_bytes:.0f}"
        out.append(f"  {yaml_scalar(name)}: {{{times}}}")
    return "\n".join(out) + "\n"


def _has_saved(profile: Profile) -> bool:
    return any(t.saved_bytes is not None for _, t in profile.layers)


def _fmt_s(value: float) -> str:
    return f"{value:.4g} s"


def _host_lines(m, width: int) -> list[str]:
    """CUDA: the times above are the GPU's; what the host's launching adds."""
    if getattr(m, "step_wall_s", None) is None:
        return []
    lines = [f"  {'whole step, wall-clock':<{width}}  {m.step_wall_s:.6g}"]
    if m.launch_floor_s_per_layer is not None:
        lines += [
            f"  {'host launching one step':<{width}}  {m.step_host_s:.6g}",
            "",
            "times are the GPU's (kernels); this host launches"
            f" {m.launch_floor_s_per_layer:.3g} s per layer and step: put it in a stack file's"
            " iteration.launch_floor_s_per_layer to project this host (docs/accuracy.md)",
        ]
    return lines


def measurement_summary(m, written: str | None) -> str:
    """Plain-text summary of a :class:`~oracle.profiling.measure.Measurement`."""
    threads = ""
    if m.device_type == "cpu":
        threads = f", {m.threads} thread{'s' if m.threads != 1 else ''}"
    rows = [
        ("forward, sum of layers", m.fw_iteration_s),
        ("backward, sum of layers", m.bw_iteration_s),
        ("weight update, sum of layers", m.wu_iteration_s),
        ("sum of per-layer times", m.layer_sum_s),
        ("whole training step (measured)", m.step_s),
    ]
    width = max(len(r[0]) for r in rows)
    lines = [
        f"{m.model} on {m.device}{threads}, {m.framework}",
        f"batch {m.batch}, median of {m.repeats} repeats after {m.warmup} warm-up,"
        f" {len(m.layers)} layers, measured in {m.elapsed_s:.1f} s",
        "",
        f"  {'per iteration':<{width}}  seconds",
    ]
    lines += [f"  {label:<{width}}  {value:.6g}" for label, value in rows]
    lines.append(f"  {'sum of layers / whole step':<{width}}  {m.ratio:.3f}")
    lines += _host_lines(m, width)
    share = getattr(m, "others_cpu_share", None)
    if m.device_type == "cpu" and share is not None and share > 0.1:
        lines += [
            "",
            f"note: other processes used {100 * share:.0f}% of the {m.cpus} CPUs while measuring;"
            " the times are likely too high and noisy (measure on an idle machine)",
        ]
    if written:
        lines += ["", f"wrote {written}"]
    return "\n".join(lines) + "\n"


def _totals(profile: Profile) -> tuple[float, float, float]:
    """Forward and backward per sample and the weight update per iteration, summed."""
    times = [t for _, t in profile.layers]
    return sum(t.fw_s for t in times), sum(t.bw_s for t in times), sum(t.wu_s for t in times)


def estimate_summary(profile: Profile, batch: int, written: str | None,
                     stack: tuple | None = None) -> str:  # fmt: skip
    """The totals of an estimated profile; with ``stack`` (its name, ``none`` for none, the
    factor a projection with it puts on the times: compute/stack.compute_factor, the GPU
    overhead it adds per iteration, the estimate at the precision it runs in where that
    differs, else None, and why it is in force where not given) its iteration too."""
    fw, bw, wu = _totals(profile)
    eff = dict(profile.meta).get("efficiency", "")
    lines = [
        f"{profile.model} on {profile.device}: ESTIMATED (roofline, not measured), {eff}",
        f"  forward per sample         {_fmt_s(fw)}",
        f"  backward per sample        {_fmt_s(bw)}",
        f"  weight update / iteration  {_fmt_s(wu)}",
        f"  iteration at batch {batch:<7} {_fmt_s(batch * (fw + bw) + wu)}",
    ]
    if stack is not None:
        name, factor, extra, runs_as, why = stack
        f, b, w = _totals(runs_as) if runs_as is not None else (fw, bw, wu)
        how = (f"{why}; " if why else "") + (f"in {runs_as.precision}, " if runs_as is not None else "")
        what = "no stack: the written times as they are" if name == NO_STACK else \
            "applied when projecting; the written times are the compute model's"
        lines.append(f"  with stack {name:<15} {_fmt_s(factor * (batch * (f + b) + w) + extra)} ({how}{what})")
    if written:
        lines += ["", f"wrote {written}"]
    return "\n".join(lines) + "\n"


__all__ = ["estimate_summary", "measurement_summary", "profile_yaml"]
