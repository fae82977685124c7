"""What the evaluation runs: workloads, memory systems, limits and policies, per profile.

An :class:`Experiment` is a grid (workloads x limits x policies on one system);
a :class:`Profile` is the list of experiments at one scale. ``quick`` fits in
about 15-20 minutes on a loaded two-core machine; ``full-depth`` runs the
paper's own networks (ResNet-200, DenseNet-264) at a sixteenth of its batch;
``paper`` runs its exact batch sizes. Graph size for the ILP is the number of
kernels, which the batch does not change: the scale is in depth, and the
time limit per solve.
"""

from __future__ import annotations

import attrs

from autotm_core.errors import UsageError

ILP_POLICIES = ("static", "synchronous", "asynchronous")
"""Policies planned by the ILP, by formulation."""
BASELINE_POLICIES = ("first-touch", "2lm", "greedy")
"""Policies planned by a baseline."""
ALL_POLICIES = ILP_POLICIES + BASELINE_POLICIES
"""Every policy of the conventional comparison, in table order."""
PAPER_RATIOS = ("1:1", "4:1", "8:1")
"""The paper's PMM:DRAM ratios."""
LARGE_RATIO = "465:185"
"""Live bytes over fast limit of the paper's large networks: about 650 GB live over 185 GB
DRAM, i.e. PMM:DRAM of 465:185 (about 2.5:1)."""
SWEEP_RATIOS = ("1:3", "1:1", "13:7", "4:1", "9:1", "19:1")
"""Fast memory at 75, 50, 35, 20, 10 and 5% of the peak live bytes."""


@attrs.frozen
class Workload:
    """A network at one scale."""

    label: str
    """Name in tables (says which network of the paper it stands for)."""
    spec: str
    """Zoo network with options, e.g. ``resnet50:batch=16``."""
    paper: str
    """The paper's setting for this network, for the scale table."""


@attrs.frozen
class Experiment:
    """A grid of cells: every workload at every limit under every policy, on one system."""

    name: str
    """Identifier (``conventional``, ``large``, ``cxl``, ...)."""
    title: str
    """Heading in the results."""
    system: str
    """Memory system (preset name or the evaluation's three-pool system)."""
    workloads: tuple[Workload, ...]
    """Networks."""
    limits: tuple[str, ...]
    """Fast-memory limits: PMM:DRAM ratios (``4:1``) or sizes (``141GB``)."""
    policies: tuple[str, ...]
    """Planners: ILP formulations and baselines."""


@attrs.frozen
class Profile:
    """The whole evaluation at one scale."""

    name: str
    """``quick``, ``full-depth`` or ``paper``."""
    description: str
    """What the scale is, for the results."""
    experiments: tuple[Experiment, ...]
    """What to run, in order."""
    time_limit_seconds: float
    """Wall-clock limit of each ILP solve (the greedy plan is its warm start)."""
    relative_gap: float = 0.01
    """Relative gap at which the solver stops (the paper's 1%)."""


def _w(label: str, spec: str, paper: str) -> Workload:
    return Workload(label=label, spec=spec, paper=paper)


_PAPER = {"inception": "Inception v4, batch 1024, 299x299", "resnet": "ResNet-200, batch 512",
          "vgg": "VGG-19, batch 2048", "densenet": "DenseNet-264, batch 512"}
_LARGE = {"inception": "Inception v4, batch 6144 (659 GB)",
          "vgg": "VGG-416, batch 320 (658 GB)", "resnet": "ResNet-200, batch 2560 (651 GB)",
          "densenet": "DenseNet-264, batch 3072 (688 GB)"}

QUICK_CONVENTIONAL = (
    _w("Inception v4 (b64)", "inception_v4:batch=64", _PAPER["inception"]),
    _w("ResNet-50 for ResNet-200 (b64)", "resnet50:batch=64", _PAPER["resnet"]),
    _w("VGG-19 (b128)", "vgg19:batch=128", _PAPER["vgg"]),
    _w("DenseNet-121 for DenseNet-264 (b64)", "densenet121:batch=64", _PAPER["densenet"]),
)
FULL_DEPTH_CONVENTIONAL = (
    _w("Inception v4 (b64)", "inception_v4:batch=64", _PAPER["inception"]),
    _w("ResNet-200 (b32)", "resnet200:batch=32", _PAPER["resnet"]),
    _w("VGG-19 (b128)", "vgg19:batch=128", _PAPER["vgg"]),
    _w("DenseNet-264 (b32)", "densenet264:batch=32", _PAPER["densenet"]),
)
PAPER_CONVENTIONAL = (
    _w("Inception v4 (b1024)", "inception_v4:batch=1024", _PAPER["inception"]),
    _w("ResNet-200 (b512)", "resnet200:batch=512", _PAPER["resnet"]),
    _w("VGG-19 (b2048)", "vgg19:batch=2048", _PAPER["vgg"]),
    _w("DenseNet-264 (b512)", "densenet264:batch=512", _PAPER["densenet"]),
)
QUICK_LARGE = (
    _w("ResNet-50 for ResNet-200 (b256)", "resnet50:batch=256", _LARGE["resnet"]),
    _w("VGG-19 for VGG-416 (b512)", "vgg19:batch=512", _LARGE["vgg"]),
)
FULL_DEPTH_LARGE = (
    _w("Inception v4 (b384)", "inception_v4:batch=384", _LARGE["inception"]),
    _w("VGG-416 (b20)", "vgg416:batch=20", _LARGE["vgg"]),
    _w("ResNet-200 (b160)", "resnet200:batch=160", _LARGE["resnet"]),
    _w("DenseNet-264 (b192)", "densenet264:batch=192", _LARGE["densenet"]),
)
PAPER_LARGE = (
    _w("Inception v4 (b6144)", "inception_v4:batch=6144", _LARGE["inception"]),
    _w("VGG-416 (b320)", "vgg416:batch=320", _LARGE["vgg"]),
    _w("ResNet-200 (b2560)", "resnet200:batch=2560", _LARGE["resnet"]),
    _w("DenseNet-264 (b3072)", "densenet264:batch=3072", _LARGE["densenet"]),
)
GPT2 = _w("GPT-2 small (b128, seq 1024)", "gpt2:batch=128,seq=1024", "not in the paper")
"""GPT-2 small with S x S attention probabilities stored: live bytes well above 141 GB of HBM."""
GPT2_QUICK = _w("GPT-2, 4 layers (b256, seq 1024)", "gpt2:batch=256,seq=1024,layers=4",
                "not in the paper")
"""Four of GPT-2 small's layers at the same width, batch and sequence."""


def _beyond(conventional: tuple[Workload, ...], ratios: tuple[str, ...],
            gpt: Workload) -> tuple[Experiment, ...]:
    return (
        Experiment(name="cxl", title="CXL expander (cxl-expander)", system="cxl-expander",
                   workloads=conventional, limits=ratios,
                   policies=("static", "synchronous", "first-touch", "2lm", "greedy")),
        Experiment(name="gpu", title="GPU with host memory (gpu-h200)", system="gpu-h200",
                   workloads=conventional, limits=ratios,
                   policies=("synchronous", "asynchronous", "first-touch", "greedy")),
        Experiment(name="three-pool", title="Three pools: HBM + DRAM + CXL (hbm-dram-cxl)",
                   system="hbm-dram-cxl", workloads=conventional, limits=ratios,
                   policies=("static", "synchronous", "first-touch", "greedy")),
        Experiment(name="transformer", title="GPT-2 on gpu-h200, HBM as the limit",
                   system="gpu-h200", workloads=(gpt,), limits=("141GB", "1:1", "4:1"),
                   policies=("synchronous", "asynchronous", "first-touch", "greedy")),
    )


def _profile(name: str, description: str, conventional: tuple[Workload, ...],
             large: tuple[Workload, ...], large_limit: str, gpt: Workload,
             beyond_workloads: tuple[Workload, ...], beyond_ratios: tuple[str, ...],
             time_limit_seconds: float) -> Profile:
    return Profile(
        name=name, description=description, time_limit_seconds=time_limit_seconds,
        experiments=(
            Experiment(name="conventional", title="Conventional networks on optane-2019",
                       system="optane-2019", workloads=conventional, limits=PAPER_RATIOS,
                       policies=ALL_POLICIES),
            Experiment(name="large", title="Large networks against 2LM on optane-2019",
                       system="optane-2019", workloads=large, limits=(large_limit,),
                       policies=("synchronous", "first-touch", "2lm")),
            Experiment(name="sweep", title=f"{conventional[2].label}: slowdown against "
                       "fast-memory size on optane-2019", system="optane-2019",
                       workloads=(conventional[2],), limits=SWEEP_RATIOS,
                       policies=("static", "synchronous", "first-touch", "2lm", "greedy")),
            *_beyond(beyond_workloads, beyond_ratios, gpt),
        ),
    )


PROFILES: dict[str, Profile] = {
    "quick": _profile(
        "quick",
        "the paper's image sizes at an eighth to a thirty-second of its batch sizes; "
        "ResNet-50 and DenseNet-121 stand in for ResNet-200 and DenseNet-264 (same blocks, "
        "fewer of them); beyond the paper: VGG-19 at 4:1 and a 4-layer GPT-2",
        QUICK_CONVENTIONAL, QUICK_LARGE, LARGE_RATIO, GPT2_QUICK, QUICK_CONVENTIONAL[2:3],
        ("4:1",), 20.0),
    "full-depth": _profile(
        "full-depth",
        "the paper's networks at full depth and image size, a sixteenth of its batch sizes",
        FULL_DEPTH_CONVENTIONAL, FULL_DEPTH_LARGE, LARGE_RATIO, GPT2, FULL_DEPTH_CONVENTIONAL,
        PAPER_RATIOS, 120.0),
    "paper": _profile(
        "paper", "the paper's networks, batch sizes and 185 GB DRAM limit for the large networks",
        PAPER_CONVENTIONAL, PAPER_LARGE, "185GB", GPT2, PAPER_CONVENTIONAL, PAPER_RATIOS, 3600.0),
}
"""Every profile by name."""


def get_profile(name: str) -> Profile:
    """The profile called ``name``."""
    try:
        return PROFILES[name]
    except KeyError:
        raise UsageError(f"no evaluation profile called {name!r}",
                         hint=f"use one of {', '.join(PROFILES)}") from None
