"""A tiny evaluation profile: a one-layer GPT-2 and a small CNN, two ratios, short limits."""

from __future__ import annotations

from autotm_core.evaluation.experiments import Experiment, Profile, Workload

GPT = Workload(label="tiny GPT", spec="gpt2:batch=1,seq=16,layers=1,width=32,heads=2,vocab=64,"
               "positions=16", paper="-")
VGG = Workload(label="tiny VGG", spec="vgg19:batch=1,image=32,classes=10", paper="-")


def tiny_profile(*, policies: tuple[str, ...] = ("static", "first-touch", "2lm", "greedy"),
                 time_limit_seconds: float = 20.0) -> Profile:
    """Conventional (two ratios) and a three-pool experiment on the tiny GPT."""
    return Profile(
        name="tiny", description="tiny graphs for the tests",
        time_limit_seconds=time_limit_seconds,
        experiments=(
            Experiment(name="conventional", title="Tiny on optane-2019", system="optane-2019",
                       workloads=(GPT,), limits=("1:1", "4:1"), policies=policies),
            Experiment(name="three-pool", title="Tiny on three pools", system="hbm-dram-cxl",
                       workloads=(GPT,), limits=("4:1",), policies=("static", "first-touch")),
        ),
    )
