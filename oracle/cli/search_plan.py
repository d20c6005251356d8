"""What ``oracle search`` runs, from its parsed options: the inputs loaded, the GPU
counts, the per-layer space and the searches (the command itself only parses and
renders; oracle/cli/search.py)."""

from __future__ import annotations


def run_search_command(model, system, profile, gpus, max_gpus, kinds, strategies, evaluate_file, **flags):
    """(results, meta, model, layer-wise config or None) for the options of oracle search
    (``flags``: those of the projection, as compute.options.Flags.parse takes them)."""
    from dataclasses import replace

    from oracle.api import estimate_at, parse_flags, system_flags
    from oracle.compute.conversion import build_context
    from oracle.compute.layerwise.search import evaluate_given
    from oracle.compute.layerwise.search import search as run_search
    from oracle.compute.stack import stack_system
    from oracle.compute.sweep import parse_strategies
    from oracle.load import Files, is_estimate
    from oracle.services.project import describe

    files = Files()
    checked = parse_flags(files, flags)  # issue 25: --stack loaded once
    kind_list = parse_kinds(kinds)
    parse_strategies(strategies)  # validate early
    m, s = files.model(model), files.system(system)
    estimated = is_estimate(profile)
    pr = None if estimated else files.bound_profile(profile, m, s)
    checked = system_flags(files, flags, s, checked)
    s = stack_system(s, checked.options.stack)
    config, assignment, counts, batch = gpu_counts(m, gpus, max_gpus, checked.batch, checked.batch_per_gpu,
                                                   evaluate_file)  # fmt: skip
    check_effort(m, counts, kind_list)
    checked = replace(checked, batch=batch)
    if estimated:  # made at the batch over the fewest GPUs searched
        pr = files.bound_profile(profile, m, s, *estimate_at(checked, counts, s))
    run = checked.resolve(pr, system=s)
    ctx = build_context(m, s, pr, run.options)  # issue 13: compute converted to the run
    meta = describe(m, s, pr, run, ctx.conversion)
    results = []
    for p in counts:
        B = run.batch if run.batch is not None else run.per_gpu * p
        if config is not None:
            results.append(evaluate_given(ctx, p, B, assignment, kinds=kind_list, strategies=strategies))
        else:
            results.append(run_search(ctx, p, B, kinds=kind_list, strategies=strategies))
    return results, meta, m, config


# The per-layer search weighs every pair of distributions on every edge of the layer
# graph (D x D redistribution costs per layer, compute/layerwise/layerwise.py Costs): its time and
# memory grow with layers x D^2.  ResNet-50 on 1,024 GPUs with subsets (175 x 176^2, 5.4
# million pairs) takes about 15 s and 0.3 GB on 2 shared cores; 65,536 GPUs with subsets
# (425 distributions, 31.6 million) took over a minute and 2.4 GB (issue 28).
MAX_SEARCH_PAIRS = 6_000_000


def check_effort(m, counts, kinds) -> None:
    """Refuse, before any cost is computed, a search whose space is beyond MAX_SEARCH_PAIRS,
    naming its size and the options that narrow it."""
    from oracle.compute.layerwise.layerwise import distributions
    from oracle.errors import OracleError

    layers = max(len(m.layers), 1)
    for p in counts:
        d = len(distributions(p, kinds))
        if layers * d * d > MAX_SEARCH_PAIRS:
            narrow = "drop subsets from --distributions, " if "subsets" in kinds else ""
            raise OracleError(
                f"the per-layer search on {p:,} GPUs would weigh {d:,} distributions for each of {layers:,}"
                f" layers ({layers * d * d:,} pairs; at most {MAX_SEARCH_PAIRS:,})", path="--distributions",
                hint=f"{narrow}list fewer kinds in --distributions, or lower --gpus/--max-gpus",
            )  # fmt: skip


def parse_kinds(kinds) -> list[str]:
    """--distributions: known kinds, in order, without repeats."""
    from oracle.compute.layerwise.layerwise_build import kind_names
    from oracle.errors import OracleError, did_you_mean

    known = (*kind_names(), "subsets")
    kind_list = []
    for raw in str(kinds).split(","):
        k = raw.strip().lower()
        if not k:
            continue
        if k not in known:
            raise OracleError(
                f"unknown distribution '{raw.strip()}'", path="--distributions",
                hint=did_you_mean(k, known) or "one or more of " + ", ".join(known),
            )  # fmt: skip
        if k not in kind_list:
            kind_list.append(k)
    if not kind_list:
        raise OracleError("no distribution given", path="--distributions", hint="e.g. data,spatial")
    if kind_list == ["subsets"]:
        raise OracleError("subsets needs the kinds to place on them", path="--distributions",
                          hint="e.g. data,filter,subsets")  # fmt: skip
    return kind_list


def gpu_counts(m, gpus, max_gpus, batch, batch_per_gpu, evaluate_file):
    """(config, assignment, GPU counts, batch): from a layer-wise file, or --gpus/--max-gpus."""
    from oracle.cli.search import search_budget_problem
    from oracle.errors import OracleError

    config, assignment = None, None
    if evaluate_file:
        from oracle.load.layerwise import bind_layerwise, load_layerwise

        config = load_layerwise(evaluate_file)
        assignment = bind_layerwise(config, m)
        if gpus is not None and gpus != config.gpus:
            raise OracleError(
                f"--gpus {gpus} differs from the file's gpus: {config.gpus}", file=config.file, path="gpus",
                hint="leave out --gpus with --evaluate",
            )  # fmt: skip
        if max_gpus is not None:
            raise OracleError(
                "--max-gpus does not apply to --evaluate (the file fixes the GPU count)"
            )
        if search_budget_problem(config.gpus):
            raise OracleError(search_budget_problem(config.gpus), file=config.file, path="gpus")
        counts = [config.gpus]
        if batch is None and batch_per_gpu is None:
            batch = config.global_batch()
    else:
        if gpus is None and max_gpus is None:
            raise OracleError(
                "give --gpus N (the GPUs to use) or --max-gpus N (a budget to search up to)"
            )
        lo = gpus or 1
        if max_gpus is not None and max_gpus < lo:
            raise OracleError(f"--max-gpus {max_gpus} is below --gpus {lo}", path="--max-gpus")
        counts = (
            [lo]
            if max_gpus is None
            else sorted({lo, max_gpus} | {1 << k for k in range(40) if lo <= (1 << k) <= max_gpus})
        )
    return config, assignment, counts, batch
