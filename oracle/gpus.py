"""Datasheet figures of the GPUs the shipped systems and profiles name.

The compute model (:mod:`oracle.compute.kernels`) needs, for the device a profile was
measured on, the same figures a system file gives for its GPU: the peak FLOP/s of each
arithmetic precision, the memory bandwidth and the number of SMs.  A system file's own
``gpu:`` section always wins for the system's GPU; this table is only used to find the
figures of a *profile's* device (``device:`` in the profile), matched by name.

``peak_TFLOPS[precision]`` is the dense peak of the units a convolution or fc layer runs
on in that precision: fp32 on the CUDA cores (no tensor cores), tf32/fp16/bf16 on the
tensor cores (dense, without the 2:4 sparsity factor).  A precision a GPU lacks (tf32 and
bf16 on Volta) is absent.

Sources (NVIDIA datasheets and architecture whitepapers):
- V100: "NVIDIA Tesla V100 GPU Accelerator" datasheet (SXM2: FP32 15.7, tensor 125
  TFLOPS, HBM2 900 GB/s); "NVIDIA Tesla V100 GPU Architecture" whitepaper (80 SMs).
- V100 SXM3 32GB in DGX-2H (450 W): DGX-2H datasheet, 2.1 PFLOPS tensor for 16 GPUs
  (131 TFLOPS each); FP32 scaled from SXM2 by the same clock ratio (131/125·15.7 = 16.5).
- A100: "NVIDIA A100 Tensor Core GPU" datasheet (SXM: FP32 19.5, TF32 156, FP16/BF16
  312 TFLOPS dense; 40GB HBM2 1,555 GB/s, 80GB HBM2e 2,039 GB/s); "NVIDIA A100 Tensor
  Core GPU Architecture" whitepaper (108 SMs).
- H100 SXM5: "NVIDIA H100 Tensor Core GPU" datasheet (FP32 67, TF32 494.7 dense,
  FP16/BF16 989.4 dense TFLOPS, HBM3 3.35 TB/s); Hopper whitepaper (132 SMs).
- H200 SXM: "NVIDIA H200 Tensor Core GPU" datasheet (same compute as H100 SXM, 141 GB
  HBM3e at 4.8 TB/s; 132 SMs).
- Before tensor cores (fp32 at the GPU Boost clock): Tesla K80 datasheet (8.73 TFLOPS and
  480 GB/s for the board's two GK210 GPUs: 4.37 and 240 per GPU, which is what CUDA and a
  framework see; 13 SMX of 192 cores each); Tesla M40 datasheet (7 TFLOPS, 288 GB/s; 3,072
  cores = 24 SMs of 128); Tesla P100 datasheet (SXM2 10.6 fp32 / 21.2 fp16, PCIe 9.3 / 18.7;
  HBM2 732 GB/s in the 16 GB parts; 56 SMs, GP100 whitepaper); Tesla P40 datasheet (12
  TFLOPS fp32, 346 GB/s; 3,840 cores = 30 SMs of 128; no fast fp16).

``architecture`` is NVIDIA's generation (vocabulary.ARCHITECTURES); :func:`architecture_of`
infers it from a GPU's name for a system file that does not state it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from oracle.vocabulary import FP32, PRECISIONS

# FP32 lanes per SM (NVIDIA's architecture whitepapers: Kepler GK110, Maxwell GM200, Volta GV100,
# Turing TU102, Ada AD102, Hopper GH100); Pascal and Ampere have 64 on their data-centre dies (GP100,
# GA100) and 128 on the others (GP10x, GA10x): GpuSpec.issue_rate tells them apart
FP32_LANES_PER_SM = {"kepler": 192, "maxwell": 128, "volta": 64, "turing": 64, "ada": 128, "hopper": 128,
                     "blackwell": 128}  # fmt: skip


@dataclass(frozen=True)
class GpuSpec:
    """What the compute model needs to know of a GPU (units converted: FLOP/s, B/s)."""

    name: str
    peak_flops: tuple[tuple[str, float], ...]  # (precision, FLOP/s)
    memory_bandwidth_Bps: float
    sm_count: int
    source: str = ""
    architecture: str = ""  # vocabulary.ARCHITECTURES; "": not known

    def peak(self, precision: str) -> float | None:
        for prec, value in self.peak_flops:
            if prec == precision:
                return value
        return None

    @property
    def precisions(self) -> tuple[str, ...]:
        return tuple(p for p, _ in self.peak_flops)

    def issue_rate(self) -> float:
        """Thread instructions per second the SMs issue: four warp schedulers of 32 threads per
        SM and clock from Maxwell to Hopper (Kepler's four dispatch two each: 256), the clock
        from the FP32 peak (2 FLOPs per lane and clock).  Lanes per SM: FP32_LANES_PER_SM; for
        Pascal, Ampere and unknown GPUs 64 where the FP32 peak per SM is below 300 GFLOP/s
        (GP100 189, GA100 180, V100 196: 64 lanes at up to 2.3 GHz), else 128 (GP102 403, GA102 434)."""
        fp32 = self.peak(FP32) or self.peak_flops[0][1]
        lanes = FP32_LANES_PER_SM.get(self.architecture)
        if lanes is None:
            lanes = 64 if self.sm_count and fp32 / self.sm_count < 300e9 else 128
        return fp32 * (256 if self.architecture == "kepler" else 128) / (2.0 * lanes)


def _spec(name, fp32, tf32, fp16, bf16, bw_GBps, sms, source) -> GpuSpec:
    peaks = [(p, v * 1e12) for p, v in zip(PRECISIONS, (fp32, tf32, fp16, bf16)) if v is not None]
    return GpuSpec(name, tuple(peaks), bw_GBps * 1e9, sms, source, architecture_of(name))


def _card(name, cores, boost_GHz, bw_GBps, tensor_per_sm, source) -> GpuSpec:
    """A graphics card from its CUDA cores and rated boost clock: fp32 at 2 FLOPs per core and
    clock; SMs of 64 cores (Turing) or 128 (Maxwell, Pascal, Ampere GA10x, Ada); the tensor
    cores' dense fp16 rate with fp32 accumulate ``tensor_per_sm`` FLOPs per SM and clock (512
    on GeForce Turing and Ampere, where the RTX 2080 Ti's 53.8 and the RTX 3090's 71 TFLOPS
    come from; 1,024 on professional Ampere, the RTX A6000's 154.8), bf16 alike and TF32 at
    half of it from Ampere on; None: no tensor cores."""
    arch = architecture_of(name)
    sms = cores // (64 if arch == "turing" else 128)
    fp16 = tensor_per_sm * sms * boost_GHz / 1e3 if tensor_per_sm else None
    later = fp16 is not None and arch in ("ampere", "ada")
    fp32 = 2 * cores * boost_GHz / 1e3
    return _spec(name, fp32, fp16 / 2 if later else None, fp16, fp16 if later else None, bw_GBps, sms,
                 f"{source}: {cores:,} cores at {boost_GHz * 1e3:,.0f} MHz boost = {fp32:.2f} TFLOPS fp32")  # fmt: skip


# NVIDIA's product names per generation, matched on the normalised name (lower case, letters
# and digits only, vendor and brand prefixes removed) from its start; a name followed by a
# further digit is another product (a10 is not a100).  Pascal before Maxwell: "titanxp"
_ARCHITECTURE_NAMES = (
    ("pascal", r"(p100|p40|p4|p6|gp100|gtx10\d\d|titanxp|titanxpascal|quadrop\d+)"),
    ("maxwell", r"(m40|m60|m10|m4|m6|gtx9\d\d|gtxtitanx|titanx|quadrom\d+)"),
    ("kepler", r"(k80|k40|k20|k10|gtx7\d\d|gtxtitan|gtxtitanblack|gtxtitanz)"),
    ("volta", r"(v100|gv100|titanv)"),
    ("turing", r"(t4|rtx20\d\d|titanrtx|quadrortx\d+)"),
    ("ampere", r"(a100|a800|a40|a30|a16|a10|a2|rtx30\d\d|rtxa\d+)"),
    ("ada", r"(l40s|l40|l4|rtx40\d\d|rtx\d+ada)"),
    ("hopper", r"(h100|h200|h800|h20|gh200)"),
    ("blackwell", r"(b100|b200|gb200|rtx50\d\d)"),
)
_PREFIXES = ("nvidia", "tesla", "geforce")  # "NVIDIA GeForce RTX 3090", "Tesla K80"


def _norm(s: str) -> str:
    return "".join(ch for ch in s.lower() if ch.isalnum())


def _bare(key: str) -> str:
    """``key`` without its vendor and brand prefixes."""
    stripped = True
    while stripped:
        stripped = False
        for p in _PREFIXES:
            if key.startswith(p):
                key, stripped = key[len(p) :], True
    return key


def architecture_of(name: str) -> str:
    """NVIDIA's generation of a GPU named ``name`` ("Tesla P100-SXM2-16GB": "pascal"), or
    "" when the name is none oracle knows.  A match must end the name, a word of it, or be
    followed by a letter ("NVIDIA H100 80GB HBM3" and "P40-24GB" match, "A2000" is no A2)."""
    words = [w for w in re.split(r"[^0-9a-z]+", name.lower()) if w]
    while words and words[0] in _PREFIXES:
        words = words[1:]
    key, ends, at = "", set(), 0
    for w in words:
        key, at = key + w, at + len(w)
        ends.add(at)
    for arch, pattern in _ARCHITECTURE_NAMES:
        m = re.match(pattern, key)
        if m and (m.end() in ends or not key[m.end()].isdigit()):
            return arch
    return ""


_V100 = "NVIDIA Tesla V100 datasheet (SXM2) and V100 architecture whitepaper"
_A100 = "NVIDIA A100 datasheet (SXM4) and A100 architecture whitepaper"
_H100 = "NVIDIA H100 datasheet (SXM5) and Hopper architecture whitepaper"
LIBRARY: tuple[GpuSpec, ...] = (
    _spec("K80", 4.37, None, None, None, 240, 13, "NVIDIA Tesla K80 datasheet (one of the board's two GK210 GPUs)"),
    _spec("M40", 7.0, None, None, None, 288, 24, "NVIDIA Tesla M40 datasheet"),
    _spec("P100-SXM2-16GB", 10.6, None, 21.2, None, 732, 56, "NVIDIA Tesla P100 datasheet (SXM2) and GP100 whitepaper"),
    _spec("P100-PCIE-16GB", 9.3, None, 18.7, None, 732, 56, "NVIDIA Tesla P100 datasheet (PCIe 16 GB) and GP100 whitepaper"),
    _spec("P40-24GB", 12.0, None, None, None, 346, 30, "NVIDIA Tesla P40 datasheet"),
    _spec("V100-SXM2-16GB", 15.7, None, 125, None, 900, 80, _V100),
    _spec("V100-SXM2-32GB", 15.7, None, 125, None, 900, 80, _V100),
    _spec("V100-SXM3-32GB", 15.7, None, 125, None, 900, 80, _V100 + "; DGX-2 datasheet (2 PFLOPS for 16 GPUs)"),
    _spec("V100-SXM3-32GB-H", 16.5, None, 131, None, 900, 80, "DGX-2H datasheet (2.1 PFLOPS for 16 GPUs)"),
    _spec("A100-SXM4-40GB", 19.5, 156, 312, 312, 1555, 108, _A100),
    _spec("A100-SXM4-80GB", 19.5, 156, 312, 312, 2039, 108, _A100),
    _spec("H100-SXM5-80GB", 67, 494.7, 989.4, 989.4, 3350, 132, _H100),
    _spec("H200-SXM-141GB", 67, 494.7, 989.4, 989.4, 4800, 132, "NVIDIA H200 datasheet (SXM)"),
    # Blackwell: NVIDIA's HGX B200 and GB200 NVL72 specification tables (per GPU; NVIDIA lists the
    # tensor rates with 2:4 sparsity, these are half of them); SMs as CUDA reports them
    _spec("B200-SXM-180GB", 75, 1100, 2250, 2250, 7700, 148, "NVIDIA HGX B200 specifications, per GPU at up to 1,000 W"
          " (FP32 75 TFLOPS; TF32 2.2, FP16/BF16 4.5 PFLOPS with sparsity; 180 GB HBM3e at 7.7 TB/s); 148 SMs"
          " (multiProcessorCount on B200, as CUTLASS's and FlashAttention-4's Blackwell kernels size their grids)"),
    _spec("GB200-186GB", 80, 1250, 2500, 2500, 8000, 152, "NVIDIA GB200 NVL72 specifications, per GPU at up to 1,200 W"
          " (FP32 80 TFLOPS; TF32 2.5, FP16/BF16 5 PFLOPS with sparsity; 186 GB HBM3e at 8 TB/s); 152 SMs"
          " (multiProcessorCount on GB200, as public kernel benchmarks state it: 'GB200: 152 SMs' in a"
          " ThunderKittens attention benchmark)"),
    # PCIe and inference parts (datasheets, dense rates: no 2:4 sparsity)
    _spec("V100-PCIE-16GB", 14, None, 112, None, 900, 80, "NVIDIA Tesla V100 datasheet (PCIe)"),
    _spec("V100-PCIE-32GB", 14, None, 112, None, 900, 80, "NVIDIA Tesla V100 datasheet (PCIe)"),
    _spec("A100-PCIE-40GB", 19.5, 156, 312, 312, 1555, 108, "NVIDIA A100 datasheet (PCIe 40 GB)"),
    _spec("A100-PCIE-80GB", 19.5, 156, 312, 312, 1935, 108, "NVIDIA A100 datasheet (PCIe 80 GB)"),
    _spec("H100-PCIE-80GB", 51, 378, 756, 756, 2000, 114, "NVIDIA H100 datasheet (PCIe); Hopper whitepaper (114 SMs)"),
    _spec("T4", 8.1, None, 65, None, 320, 40, "NVIDIA T4 datasheet (mixed precision FP16/FP32 65 TFLOPS); Turing whitepaper"),
    _spec("A10", 31.2, 62.5, 125, 125, 600, 72, "NVIDIA A10 datasheet"),
    _spec("A40", 37.4, 74.8, 149.7, 149.7, 696, 84, "NVIDIA A40 datasheet"),
    _spec("L4", 30.3, 60, 121, 121, 300, 58, "NVIDIA L4 datasheet"),
    _spec("L40S", 91.6, 183, 362, 362, 864, 142, "NVIDIA L40S datasheet"),
    # graphics cards, as validation's system files (benchmarks/data/graphics, pre_volta): the
    # whitepapers' and spec pages' rates at the rated boost clock; GeForce tensor cores run
    # fp16/bf16 with fp32 accumulate (what mixed precision uses) at half rate, and Pascal
    # GeForce parts run fp16 at 1/64 rate (no fp16 peak)
    # the K40 as shipped runs its 745 MHz base clock (2 x 2880 x 0.745 GHz = 4.29 TFLOPS): its
    # boost clocks (810, 875 MHz) are application clocks a user selects with nvidia-smi -ac;
    # the K80 after it boosts by itself (Autoboost).  A K40 set to 875 MHz: fp32 5.04
    _spec("K40", 4.29, None, None, None, 288, 15, "NVIDIA Tesla K40 board specification BD-06902-001_v05"
          " (base clock 745 MHz, 4.29 TFLOPS fp32: 'All boards ship with core clock set to the base clock"
          " value. Boost clocks can be selected using NVML or NVSMI'); GK110 whitepaper"),
    _spec("TITAN-X-MAXWELL", 6.6, None, None, None, 336.5, 24, "NVIDIA GeForce GTX TITAN X spec page (boost 1075 MHz)"),
    _spec("GTX-1080", 8.87, None, None, None, 320, 20, "NVIDIA GeForce GTX 1080 whitepaper"),
    _spec("GTX-1080-TI", 11.34, None, None, None, 484, 28, "NVIDIA GeForce GTX 1080 Ti spec page"),
    _spec("TITAN-X-PASCAL", 10.97, None, None, None, 480, 28, "NVIDIA TITAN X (Pascal) spec page"),
    _spec("RTX-2080-TI", 13.4, None, 53.8, None, 616, 68, "NVIDIA Turing whitepaper, Appendix A (RTX 2080 Ti reference)"),
    _spec("TITAN-RTX", 16.3, None, 130, None, 672, 72, "NVIDIA TITAN RTX spec page; Turing whitepaper"),
    _spec("RTX-3090", 35.6, 35.6, 71, 71, 936, 82, "NVIDIA Ampere GA102 whitepaper, Appendix A (RTX 3090)"),
    _spec("RTX-4090", 82.6, 82.6, 165.2, 165.2, 1008, 128, "NVIDIA Ada Lovelace whitepaper, Appendix A (RTX 4090)"),
    # workstation and further cards (the figures of their datasheets and whitepapers; where a
    # sheet gives only cores and clock, 2 FLOPs per core and clock at the boost clock; tensor
    # rates dense, with fp32 accumulate: full rate on the professional parts, half on GeForce)
    _spec("TITAN-V", 14.9, None, 110, None, 652.8, 80, "NVIDIA TITAN V spec page (110 TFLOPS tensor; 5,120 cores at"
          " 1,455 MHz boost = 14.9 TFLOPS fp32; 12 GB HBM2 on a 3,072-bit bus at 1.7 Gbps = 652.8 GB/s); Volta whitepaper (80 SMs)"),
    _spec("QUADRO-RTX-6000", 16.3, None, 130.5, None, 672, 72, "NVIDIA Quadro RTX 6000 datasheet (16.3 TFLOPS fp32,"
          " 130.5 TFLOPS tensor, 672 GB/s); Turing whitepaper (TU102: 72 SMs)"),
    _spec("QUADRO-RTX-8000", 16.3, None, 130.5, None, 672, 72, "NVIDIA Quadro RTX 8000 datasheet (as the RTX 6000,"
          " 48 GB); Turing whitepaper (TU102: 72 SMs)"),
    _spec("RTX-A5000", 27.8, 55.6, 111.1, 111.1, 768, 64, "NVIDIA RTX A5000 datasheet (27.8 TFLOPS fp32; 222.2 TFLOPS"
          " tensor with 2:4 sparsity, 111.1 dense; 768 GB/s); GA102 whitepaper (64 SMs)"),
    _spec("RTX-A6000", 38.7, 77.4, 154.8, 154.8, 768, 84, "NVIDIA RTX A6000 datasheet (38.7 TFLOPS fp32; 309.7 TFLOPS"
          " tensor with 2:4 sparsity, 154.8 dense; 768 GB/s); GA102 whitepaper (84 SMs)"),
    _spec("RTX-3080", 29.8, 29.8, 59.5, 59.5, 760, 68, "NVIDIA Ampere GA102 whitepaper, Appendix A (RTX 3080 10 GB)"),
    _spec("RTX-3080-TI", 34.1, 34.1, 68.2, 68.2, 912, 80, "NVIDIA GeForce RTX 3080 Ti spec page (10,240 cores at"
          " 1,665 MHz boost, 19 Gbps GDDR6X on 384 bits); GA102 tensor rate per SM and clock as the RTX 3090"),
    _spec("RTX-4080", 48.7, 48.7, 97.5, 97.5, 716.8, 76, "NVIDIA Ada Lovelace whitepaper, Appendix A (RTX 4080 16 GB)"),
    _spec("RTX-6000-ADA", 91.1, 182.1, 364.2, 364.2, 960, 142, "NVIDIA RTX 6000 Ada Generation datasheet (91.1 TFLOPS"
          " fp32, 1,457 TFLOPS fp8 with sparsity: 364.2 fp16 dense; 960 GB/s); Ada Lovelace whitepaper (142 SMs)"),
    _spec("A30", 10.3, 82, 165, 165, 933, 56, "NVIDIA A30 datasheet (FP32 10.3, TF32 82, FP16/BF16 165 TFLOPS dense, 933 GB/s)"),
    _spec("L40", 90.5, 90.5, 181, 181, 864, 142, "NVIDIA L40 datasheet (FP32 90.5, TF32 90.5, FP16/BF16 181 TFLOPS"
          " dense, 864 GB/s)"),
    # more cards of published benchmarks, from the CUDA cores, rated boost clock and bandwidth
    # their spec pages give (_card)
    _card("GTX-980-TI", 2816, 1.075, 336.5, None, "NVIDIA GeForce GTX 980 Ti spec page (7 Gbps GDDR5 on 384 bits)"),
    _card("GTX-1070", 1920, 1.683, 256, None, "NVIDIA GeForce GTX 1070 spec page (8 Gbps GDDR5 on 256 bits)"),
    _card("TITAN-XP", 3840, 1.582, 547.7, None, "NVIDIA TITAN Xp spec page"),
    _spec("P4", 5.5, None, None, None, 192, 20, "NVIDIA Tesla P4 datasheet (5.5 TFLOPS fp32, 192 GB/s; 2,560 cores)"),
    _card("RTX-2060", 1920, 1.680, 336, 512, "NVIDIA GeForce RTX 2060 spec page (14 Gbps GDDR6 on 192 bits)"),
    _card("RTX-2070", 2304, 1.620, 448, 512, "NVIDIA Turing whitepaper, Appendix A (RTX 2070 reference)"),
    _card("RTX-2080", 2944, 1.710, 448, 512, "NVIDIA Turing whitepaper, Appendix A (RTX 2080 reference)"),
    _card("RTX-2080-SUPER", 3072, 1.815, 496, 512, "NVIDIA GeForce RTX 2080 SUPER spec page (15.5 Gbps GDDR6 on 256 bits)"),
    _card("RTX-3060", 3584, 1.777, 360, 512, "NVIDIA GeForce RTX 3060 spec page (12 GB; 15 Gbps GDDR6 on 192 bits)"),
    _card("RTX-3070", 5888, 1.725, 448, 512, "NVIDIA Ampere GA102 whitepaper, Appendix A (RTX 3070)"),
    _card("RTX-A4000", 6144, 1.560, 448, 1024, "NVIDIA RTX A4000 datasheet (19.2 TFLOPS fp32, 153.4 tensor with 2:4 sparsity)"),
    _card("RTX-A4500", 7168, 1.650, 640, 1024, "NVIDIA RTX A4500 datasheet (23.7 TFLOPS fp32, 189.2 tensor with 2:4 sparsity)"),
    _card("RTX-4070-TI", 7680, 2.610, 504, 512, "NVIDIA GeForce RTX 4070 Ti spec page (21 Gbps GDDR6X on 192 bits)"),
)


# the names CUDA reports (torch.cuda.get_device_name, nvidia-smi), which `oracle profile
# --device cuda` records as a profile's device, for the library entries they are: the SXM
# parts (the PCIe and NVL parts have other clocks and bandwidths, and no entry here)
DEVICE_NAMES = {
    "H100-SXM5-80GB": ("NVIDIA H100 80GB HBM3",),
    "H200-SXM-141GB": ("NVIDIA H200",),
    "B200-SXM-180GB": ("NVIDIA B200",),
    "GB200-186GB": ("NVIDIA GB200",),
    "H100-PCIE-80GB": ("NVIDIA H100 PCIe",),
    "A100-PCIE-80GB": ("NVIDIA A100 80GB PCIe",),
    "TITAN-X-MAXWELL": ("GeForce GTX TITAN X",),
    "P40-24GB": ("Tesla P40",),
    "RTX-6000-ADA": ("NVIDIA RTX 6000 Ada Generation",),
}

# A family name alone ("V100", "A100 80GB") names no one part: the SXM parts (the form of the
# DGX and HGX nodes multi-node training runs on) of the memory size the file gives, nearest
# first (GpuSpec.name holds it).  The PCIe parts differ in clocks or bandwidth: name them.
FAMILIES = {
    "p100": ("P100-SXM2-16GB",),
    "v100": ("V100-SXM2-16GB", "V100-SXM2-32GB"),
    "a100": ("A100-SXM4-40GB", "A100-SXM4-80GB"),
    "h100": ("H100-SXM5-80GB",),
    "h200": ("H200-SXM-141GB",),
    "b200": ("B200-SXM-180GB",),
}


# every name a library entry answers to, normalised: its own, and the names CUDA reports
_NAMES = {_norm(n): spec for spec in LIBRARY for n in (spec.name, *DEVICE_NAMES.get(spec.name, ()))}


def same_gpu(a: str, b: str) -> bool:
    """Whether two names are one GPU model, case, separators and the vendor's prefixes
    ignored ("NVIDIA GeForce RTX 3090", as CUDA reports it, is a system file's "RTX-3090")."""
    return _bare(_norm(a)) == _bare(_norm(b))


def lookup(name: str) -> GpuSpec | None:
    """The library entry whose name matches ``name`` (case and separators ignored), by its
    own name with or without the vendor's prefix, or by the name CUDA reports for it."""
    key = _norm(name)
    return _NAMES.get(key) or _NAMES.get(_bare(key))


def _memory_of(spec: GpuSpec) -> float:
    return float(re.search(r"(\d+)GB", spec.name).group(1))


def lookup_family(name: str, memory_GB: float | None = None) -> GpuSpec | None:
    """The part a family name alone stands for (FAMILIES: "V100", "Tesla V100", "A100 80GB"),
    the SXM part whose memory is nearest ``memory_GB`` (or the name's own "80GB"); None for
    any other name."""
    m = re.fullmatch(r"([a-z]\d{3})(\d+gb)?", _bare(_norm(name)))
    if m is None or m.group(1) not in FAMILIES:
        return None
    memory = float(m.group(2)[:-2]) if m.group(2) else memory_GB
    parts = [_NAMES[_norm(n)] for n in FAMILIES[m.group(1)]]
    return min(parts, key=lambda g: abs(_memory_of(g) - memory)) if memory else parts[0]
