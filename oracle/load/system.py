"""Load a cluster description (docs/file-formats.md) into a frozen :class:`oracle.model.System`.

Units are converted once here: ``memory_GB`` (10^9 bytes) to bytes, ``peak_TFLOPS`` to
FLOP/s, ``bandwidth_GB_per_s`` (an alternative to ``beta_s_per_byte``) to s/byte.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from oracle.errors import OracleError
from oracle.gpus import architecture_of
from oracle.limits import BATCH_PER_GPU, CONTENTION, COUNT, GPUS
from oracle.load.anchors import parse_anchors
from oracle.load.fields import Fields, boolean, choice, integer, number, of, string
from oracle.load.interconnect import parse_interconnect
from oracle.load.model_systems import parse_model_systems
from oracle.load.yamlfile import load_yaml
from oracle.model import (
    CollectiveTable,
    FrameworkMemory,
    Implementation,
    InputPipeline,
    Interconnect,
    NetworkLevel,
    OperationOverride,
    Protocol,
    System,
)
from oracle.vocabulary import ALGORITHMS, ARCHITECTURES, FP32, NO_TENSOR_CORES, PRECISIONS, RING

OPERATIONS = ("allreduce", "allgather", "halo", "p2p")
# operations by purpose (issue 14): each may have its own transport, algorithm and factor;
# an entry for a purpose wins over the entry for its primitive (compute/network.PURPOSES)
PURPOSES = ("gradient_allreduce", "layer_allgather", "layer_allreduce", "tail_gather", "pipeline_p2p")


# where a level's α and β come from (network[].basis; oracle list systems says it)
BASES = ("measured", "fitted", "calibrated", "nominal")

def load_system(path: str | Path) -> System:
    name = str(path)
    return parse_system(load_yaml(path, "system file"), name)


def _alpha_beta(f: Fields, required: bool) -> tuple[float | None, float | None]:
    """α in seconds and β in seconds per byte (β may be given as a bandwidth)."""
    get = f.req if required else f.opt
    alpha = get("alpha_s", number(gt=0, what="a latency in seconds"))
    has_beta = f.has("beta_s_per_byte")
    has_bw = f.has("bandwidth_GB_per_s")
    if has_beta and has_bw:
        raise f.error("bandwidth_GB_per_s", "give either beta_s_per_byte or bandwidth_GB_per_s, not both")
    if has_bw:
        bw = f.req("bandwidth_GB_per_s", number(gt=0, what="a bandwidth in GB/s"))
        beta = 1.0 / (bw * 1e9)
    elif required:
        beta = f.req(
            "beta_s_per_byte",
            number(gt=0, what="seconds per byte"),
            "seconds per byte, or bandwidth_GB_per_s",
        )
    else:
        beta = f.opt("beta_s_per_byte", number(gt=0, what="seconds per byte"))
    f.used.update(("beta_s_per_byte", "bandwidth_GB_per_s"))
    return alpha, beta


def _gpu(top: Fields) -> dict:
    """The ``gpu:`` section's values (units as written)."""
    gpu = top.sub("gpu")
    assert gpu is not None
    out = {
        "model": gpu.req("model", string()),
        "memory_GB": gpu.req("memory_GB", number(gt=0, what="GPU memory in GB (10^9 bytes)")),
        "peaks": _peaks(gpu),
        "memory_bandwidth_GB_per_s": gpu.opt("memory_bandwidth_GB_per_s", number(gt=0)),
        "sm_count": gpu.opt("sm_count", integer(ge=1, le=100000, what="streaming multiprocessors (SMs)")),
        "architecture": gpu.opt("architecture", choice(ARCHITECTURES), ""),
        "workspace_GB": gpu.opt("workspace_GB", number(ge=0, what="GB the framework reserves"), 0.0),
    }
    gpu.done(allowed_extra=("source",))
    return _with_library_figures(out)


def _with_library_figures(g: dict) -> dict:
    """The GPU section with what it omits of a GPU oracle's library names (oracle/gpus.py:
    datasheet figures) filled in: the peaks of the precisions it gives none for, the memory
    bandwidth and the SM count; ``g["filled"]`` says which, with the library's source.  A
    family name alone ("A100") takes the SXM part of the file's memory size
    (oracle.gpus.lookup_family).  The file's own figures win; a GPU the library lacks keeps
    only the file's."""
    from oracle.gpus import lookup, lookup_family

    known = lookup(g["model"])
    family = known is None
    if family:
        known = lookup_family(g["model"], g["memory_GB"])
    if known is None:
        return {**g, "filled": ""}
    given = dict(g["peaks"])
    extra = tuple((p, v) for p, v in known.peak_flops if p not in given)
    filled = [f"{p} peak" for p, _ in extra]
    filled += ["memory bandwidth"] if not g["memory_bandwidth_GB_per_s"] else []
    filled += ["SM count"] if not g["sm_count"] else []
    taken = f"the {known.name} (the SXM part of that memory, for a name that gives no form factor)" if family \
        else f"the {known.name}"
    note = f"{', '.join(filled)} of {taken} from oracle's GPU library ({known.source})" if filled else ""
    return {**g, "peaks": tuple(g["peaks"]) + extra, "filled": note,
            "memory_bandwidth_GB_per_s": g["memory_bandwidth_GB_per_s"] or known.memory_bandwidth_Bps / 1e9,
            "sm_count": g["sm_count"] or known.sm_count}  # fmt: skip


def parse_system(doc: dict, file: str) -> System:
    top = Fields(doc, file, "")
    name = top.req("name", string())
    source = top.opt("source", string(nonempty=False), "")
    use_for = top.opt("use_for", string(nonempty=False), "")
    top.opt("notes", string(nonempty=False), "")

    g = _gpu(top)
    gpus_per_node = top.req("gpus_per_node", of(COUNT))
    nodes = top.req("nodes", of(COUNT))
    links = top.opt("links_per_node", of(COUNT))
    contention = top.opt("contention_factor", of(CONTENTION))

    levels = _levels(top, file)
    interconnect = parse_interconnect(top, gpus_per_node, nodes, levels)
    ops = _operations(top, interconnect)
    inp = _input(top)
    # the software of GPUs before tensor cores launched activations apart (cuDNN's batch norm
    # with fused activation, cudnnBatchNormalizationForwardTrainingEx, came with cuDNN 7.4 in
    # 2018): their default, unless ``implementation.fused_activations`` says otherwise
    impl = _implementation(top, (g["architecture"] or architecture_of(g["model"])) not in NO_TENSOR_CORES)
    framework = _framework(top)
    tables, algorithm, ps_servers, collnet, tree, ll128 = _collectives(top, gpus_per_node, interconnect)
    anchors = parse_anchors(top, file)  # issue 26
    stack = _stack(top)
    models = parse_model_systems(top, doc, file, parse_system)  # issue 26
    top.done()

    if g["memory_GB"] > 1e6:
        raise top.error(None, f"gpu.memory_GB {g['memory_GB']:g} is not plausible (more than a petabyte)")
    mem_bw = g["memory_bandwidth_GB_per_s"]
    source = "; ".join(s for s in (source, g["filled"]) if s)
    return System(
        name=name,
        gpu_model=g["model"],
        gpu_memory_bytes=g["memory_GB"] * 1e9,
        gpu_peak_flops=dict(g["peaks"]).get(FP32),
        gpu_peaks=g["peaks"],
        gpu_sm_count=g["sm_count"],
        gpu_architecture=g["architecture"],
        gpu_memory_bandwidth_Bps=mem_bw * 1e9 if mem_bw else None,
        gpus_per_node=gpus_per_node,
        nodes=nodes,
        network=tuple(levels),
        contention_factor=contention,
        links_per_node=links,
        operations=tuple(ops),
        source=source,
        file=file,
        input=inp,
        implementation=impl,
        collective_tables=tables,
        collective_algorithm=algorithm or RING,
        collective_algorithm_stated=algorithm is not None,
        ps_servers=ps_servers,
        gpu_workspace_bytes=g["workspace_GB"] * 1e9,
        framework=framework,
        use_for=" ".join(use_for.split()),
        interconnect=interconnect,
        collnet=collnet,
        ll128_across_nodes=ll128,
        tree_beyond_gpus=tree,
        anchors=anchors,
        **stack,
        models=models,
    )


def _stack(top: Fields) -> dict:
    """``stack: {name: chainermnx, source: ...}`` (optional, issue 25): the software stack
    projections on this system use when --stack is not given; ``none``: no stack."""
    from oracle.resources import shipped_names
    from oracle.vocabulary import NO_STACK

    sub = top.sub("stack", required=False)
    if sub is None:
        return {}
    name = sub.req("name", choice((*shipped_names("stacks"), NO_STACK)))
    source = sub.req("source", string(), "why this system's runs use that software")
    sub.done()
    return {"stack": name, "stack_source": source}


def _levels(top: Fields, file: str) -> list[NetworkLevel]:
    """The network levels, innermost first."""
    levels: list[NetworkLevel] = []
    for i, raw, line in top.items("network"):
        lf = Fields(raw, file, f"network[{i}]", line)
        lname = lf.req("name", string())
        lf.path = f"network[{i}] ({lname})"
        max_gpus = lf.req("max_gpus", of(GPUS), "the largest span this level serves")
        alpha, beta = _alpha_beta(lf, required=True)
        lsource = lf.opt("source", string(nonempty=False), "")
        basis = lf.opt("basis", choice(BASES), "")
        lf.opt("notes", string(nonempty=False), "")
        protocols = _protocols(lf, file)
        lf.done()
        if levels and max_gpus <= levels[-1].max_gpus:
            raise lf.error(
                "max_gpus",
                f"got {max_gpus}; levels go innermost first, so max_gpus must increase"
                f" (previous level has {levels[-1].max_gpus})",
            )
        assert alpha is not None and beta is not None
        levels.append(NetworkLevel(lname, max_gpus, alpha, beta, lsource, protocols, basis))
    if not levels:
        raise top.error("network", "has no levels; expected at least one network level")
    return levels


def _operations(top: Fields, interconnect: Interconnect) -> list[tuple[str, OperationOverride]]:
    """The per-operation overrides of α and β (docs/file-formats.md)."""
    ops: list[tuple[str, OperationOverride]] = []
    opf = top.sub("operations", required=False)
    if opf is not None:
        for op in list(opf.map):
            if op not in OPERATIONS + PURPOSES:
                continue  # reported by done() with a hint
            of = opf.sub(op)
            assert of is not None
            alpha, beta = _alpha_beta(of, required=False)
            ascale = of.opt("alpha_scale", number(gt=0), 1.0)
            bscale = of.opt("beta_scale", number(gt=0), 1.0)
            osrc = of.opt("source", string(nonempty=False), "")
            algo = of.opt("algorithm", choice(ALGORITHMS))
            if algo and interconnect.cannot_run(algo):
                raise of.error("algorithm", f"'{algo}': {interconnect.cannot_run(algo)}")
            factor = of.opt("factor", number(gt=0, le=1e6, what="a time factor"), 1.0)
            of.done()
            ops.append((op, OperationOverride(alpha, beta, ascale, bscale, osrc, algo, factor)))
        opf.done(allowed_extra=OPERATIONS + PURPOSES)
    return ops


def _protocols(lf: Fields, file: str) -> tuple[Protocol, ...]:
    """A level's optional ``protocols:``: more α-β lines (small-message regimes, e.g.
    NCCL's LL and LL128; compute/protocols.py), each ``{name, alpha_s, beta_s_per_byte |
    bandwidth_GB_per_s}``."""
    out = []
    for j, raw, line in lf.items("protocols", required=False):
        pf = Fields(raw, file, f"{lf.path}.protocols[{j}]", line)
        name = pf.req("name", string())
        alpha, beta = _alpha_beta(pf, required=True)
        pf.done()
        assert alpha is not None and beta is not None
        out.append(Protocol(name, alpha, beta))
    return tuple(out)
def _peaks(gpu: Fields) -> tuple[tuple[str, float], ...]:
    """``gpu.peak_TFLOPS``: one number (the fp32 peak, as before issue 13) or a mapping
    from precision (fp32, tf32, fp16, bf16) to the dense peak of the units a conv/fc
    layer runs on in that precision (tensor cores for tf32/fp16/bf16), in FLOP/s."""

    check = number(gt=0, what="a peak in TFLOP/s")
    if not gpu.has("peak_TFLOPS") or not isinstance(gpu.map["peak_TFLOPS"], dict):
        peak = gpu.opt("peak_TFLOPS", check)
        return ((FP32, peak * 1e12),) if peak else ()
    pf = gpu.sub("peak_TFLOPS")
    assert pf is not None
    peaks = [(prec, pf.opt(prec, check) * 1e12) for prec in PRECISIONS if pf.has(prec)]
    pf.opt("source", string(nonempty=False), "")
    pf.done()
    if not peaks:
        raise gpu.error("peak_TFLOPS", f"is empty; expected a peak for at least one of {', '.join(PRECISIONS)}")
    return tuple(peaks)


def _input(top: Fields) -> InputPipeline | None:
    """The optional ``input:`` section (docs/cost-model.md input pipeline)."""
    f = top.sub("input", required=False)
    if f is None:
        return None
    rate = number(gt=0, what="samples per second")
    bw = number(gt=0, what="a bandwidth in GB/s")
    out = InputPipeline(
        loader_samples_per_s=f.opt("loader_samples_per_s", rate),
        node_samples_per_s=f.opt("node_samples_per_s", rate),
        leader_samples_per_s=f.opt("leader_samples_per_s", rate),
        storage_Bps=_gb(f.opt("storage_GB_per_s", bw)),
        node_storage_Bps=_gb(f.opt("node_storage_GB_per_s", bw)),
        overlap=f.opt("overlap", boolean(), True),
        source=f.opt("source", string(nonempty=False), ""),
    )
    f.opt("notes", string(nonempty=False), "")
    f.done()
    return out


def _collectives(top: Fields, gpus_per_node: int, interconnect: Interconnect):
    """The optional ``collectives:`` section: ``algorithm`` (vocabulary.ALGORITHMS; None
    when unstated: the ring, or NCCL's choice under a stack whose NCCL chooses,
    docs/cost-model.md); ``collnet`` (NCCL's CollNet on a SHARP fabric,
    NCCL_COLLNET_ENABLE; default off as in NCCL); ``mode: table`` uses measured times
    (interpolated in message size) where a table covers the exact GPU count and span;
    ``mode: alpha-beta`` (the default) keeps every table unused; ``tree_beyond_gpus``
    (with ``algorithm: ring``): the most GPUs the ring-formula levels were fitted on, under
    a library with trees (compute/trees.with_trees); ``ll128_across_nodes`` (default true):
    whether NCCL runs LL128 in collectives that cross nodes (compute/nccl.py).  Returns
    (tables, algorithm, parameter servers, collnet, tree_beyond_gpus, ll128_across_nodes)."""
    f = top.sub("collectives", required=False)
    if f is None:
        return (), None, 1, False, None, True
    algorithm = f.opt("algorithm", choice(ALGORITHMS), None)
    if algorithm is not None and interconnect.cannot_run(algorithm):
        raise f.error("algorithm", f"'{algorithm}': {interconnect.cannot_run(algorithm)}")
    tree = f.opt("tree_beyond_gpus", of(GPUS), None)
    if tree is not None and algorithm != RING:
        raise f.error("tree_beyond_gpus", f"extends levels fitted through the ring formula; needs algorithm: ring "
                                          f"(here {algorithm or 'unstated'})")  # fmt: skip
    if tree is not None and tree <= gpus_per_node:
        raise f.error("tree_beyond_gpus", f"got {tree}; a tree runs across nodes: more than gpus_per_node "
                                          f"({gpus_per_node})")  # fmt: skip
    ps_servers = f.opt("ps_servers", of(COUNT), 1)  # parameter servers (algorithm ps)
    collnet = f.opt("collnet", boolean(), False)
    ll128 = f.opt("ll128_across_nodes", boolean(), True)
    if collnet and not interconnect.sharp:
        raise f.error("collnet", "CollNet needs switches that reduce in the network (SHARP);"
                      " interconnect.sharp is false")  # fmt: skip
    mode = f.opt("mode", choice(("table", "alpha-beta")), "alpha-beta")
    out = []
    for i, raw, line in f.items("tables", required=mode == "table"):
        tf = Fields(raw, f.file, f"collectives.tables[{i}]", line)
        op = tf.req("operation", choice(("allreduce", "allgather")))
        gpus = tf.req("gpus", of(replace(GPUS, lo=2)))
        nodes = tf.req("nodes", of(COUNT))
        sizes = _numbers(tf, "bytes", gt=0)
        times = _numbers(tf, "seconds", gt=0)
        src = tf.opt("source", string(nonempty=False), "")
        tf.done()
        if len(sizes) != len(times) or len(sizes) < 2:
            raise tf.error("seconds", f"has {len(times)} values for {len(sizes)} sizes; expected as many, at least 2")
        if any(b <= a for a, b in zip(sizes, sizes[1:])):
            raise tf.error("bytes", "sizes must increase strictly")
        if nodes > gpus:
            raise tf.error("nodes", f"{nodes} nodes for {gpus} GPUs")
        span = gpus if nodes == 1 else nodes * gpus_per_node
        out.append(CollectiveTable(op, gpus, span, tuple(sizes), tuple(times), src))
    f.done()
    return (tuple(out) if mode == "table" else ()), algorithm, ps_servers, collnet, tree, ll128


def _numbers(f: Fields, key: str, gt: float) -> list[float]:
    check = number(gt=gt)
    values = []
    for i, v, _ in f.items(key):
        try:
            values.append(check(v))
        except ValueError as exc:
            raise f.error(key, f"item {i}: {exc}") from None
    return values


def _gb(v: float | None) -> float | None:
    return None if v is None else v * 1e9


def _implementation(top: Fields, fused_default: bool = True) -> Implementation:
    """The optional ``implementation:`` section (docs/cost-model.md)."""
    f = top.sub("implementation", required=False)
    if f is None:
        return Implementation(fused_activations=fused_default)
    out = Implementation(
        data_spatial_allreduce=f.opt("data_spatial_allreduce", choice(("flat", "leader")), "flat"),
        split_serial_fraction=f.opt("split_serial_fraction", number(ge=0, le=1, what="a fraction"), 0.0),
        split_overhead_s=f.opt("split_overhead_s", number(ge=0, what="seconds per split layer and iteration"), 0.0),
        fused_activations=f.opt("fused_activations", boolean(), fused_default),
        source=f.opt("source", string(nonempty=False), ""),
        data_filter_allreduce=f.opt("data_filter_allreduce", choice(("flat", "leader")), "flat"),
        layer_backward=f.opt(
            "layer_backward", choice(("allreduce", "reduce_scatter", "allreduce_slice", "none")), "allreduce"
        ),
        spatial_decomposition=f.opt("spatial_decomposition", choice(("grid", "strips")), "grid"),
        halo_chain=f.opt("halo_chain", boolean(), False),
        halo_sync_s=f.opt("halo_sync_s", number(ge=0, le=1e3, what="seconds per halo exchange"), 0.0),
        compute_factors=_per_model(
            f, "compute_factors", number(gt=0, le=1e3, what="a time factor on the model's profile")
        ),
        compute_batches=_per_model(f, "compute_samples_per_gpu", of(BATCH_PER_GPU)),
    )
    f.opt("notes", string(nonempty=False), "")
    f.done()
    return out


def _per_model(impl: Fields, key: str, check) -> tuple[tuple[str, float], ...]:
    """``implementation.<key>``: model name -> a number (``compute_factors``: the time
    factor on its profile; ``compute_samples_per_gpu``: the batch it was measured at)."""
    f = impl.sub(key, required=False)
    if f is None:
        return ()
    out = tuple((str(name), f.req(str(name), check)) for name in f.map)
    f.done()
    return out


def _framework(top: Fields) -> FrameworkMemory:
    """The optional ``framework:`` section: what the training framework keeps per GPU
    besides the model's tensors (``--memory-model framework``; defaults and sources in
    :class:`oracle.model.FrameworkMemory`)."""
    f = top.sub("framework", required=False)
    d = FrameworkMemory()
    if f is None:
        return d
    gb = number(ge=0, le=1e4, what="GB (10^9 bytes)")
    out = FrameworkMemory(
        cuda_context_bytes=f.opt("cuda_context_GB", gb, d.cuda_context_bytes / 1e9) * 1e9,
        workspace_bytes=f.opt("workspace_GB", gb, d.workspace_bytes / 1e9) * 1e9,
        allocator_overhead=f.opt(
            "allocator_overhead", number(ge=0, le=10, what="a fraction of tensor memory"), d.allocator_overhead
        ),
        gradient_bucket_copy=f.opt("gradient_bucket_copy", boolean(), d.gradient_bucket_copy),
        name=f.opt("name", string(), d.name),
        source=f.opt("source", string(nonempty=False), ""),
    )
    f.opt("notes", string(nonempty=False), "")
    f.done()
    return out


__all__ = ["load_system", "parse_system", "OracleError", "OPERATIONS"]
