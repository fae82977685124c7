"""The profiles name real zoo networks, systems and limits."""

from __future__ import annotations

import pytest

from autotm_core.errors import UsageError
from autotm_core.evaluation.cells import limit_nbytes, limited_system
from autotm_core.evaluation.experiments import PROFILES, get_profile
from autotm_core.evaluation.systems import SYSTEM_NAMES, evaluation_system, hbm_dram_cxl
from autotm_core.zoo.catalog import NETWORKS, parse_spec


def test_every_workload_spec_names_a_zoo_network_and_its_options() -> None:
    for profile in PROFILES.values():
        for experiment in profile.experiments:
            assert experiment.system in SYSTEM_NAMES
            for workload in experiment.workloads:
                name, options = parse_spec(workload.spec)
                assert name in NETWORKS, workload.spec
                assert set(options) <= set(NETWORKS[name].defaults), workload.spec


def test_gpt2_outgrows_the_h200s_memory() -> None:
    from autotm_core.zoo import build_network

    transformer = next(e for e in get_profile("quick").experiments if e.name == "transformer")
    graph = build_network(transformer.workloads[0].spec)
    assert limit_nbytes(graph, "141GB") < graph.liveness.peak_nbytes


def test_three_pool_limits_every_pool_but_the_slowest() -> None:
    system = limited_system(hbm_dram_cxl(), 10**9)
    assert [p.capacity_nbytes for p in system.pools[:2]] == [10**9, 10**9]
    assert system.pools[2].capacity_nbytes == hbm_dram_cxl().pools[2].capacity_nbytes
    assert evaluation_system("optane-2019").name == "optane-2019"


def test_unknown_profile() -> None:
    with pytest.raises(UsageError, match="no evaluation profile"):
        get_profile("huge")
