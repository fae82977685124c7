"""Raw NUMA system calls: node lists, binding to node 0, where pages really are, clear errors."""

from __future__ import annotations

import ctypes
import os
import platform
import re

import numpy as np
import pytest

from autotm_core.errors import NumaError
from autotm_core.executor import numa
from autotm_core.executor.arena import ArenaRequest, Space


def test_parse_node_list():
    assert numa.parse_node_list("0-3,5,7-8\n") == [0, 1, 2, 3, 5, 7, 8]
    assert numa.parse_node_list("") == []


def test_node_0_is_allowed():
    assert 0 in numa.allowed_nodes()


@pytest.mark.parametrize("header", ["/usr/include/x86_64-linux-gnu/asm/unistd_64.h",
                                    "/usr/include/asm/unistd_64.h"])
def test_syscall_numbers_match_the_kernel_headers(header):
    if platform.machine() != "x86_64" or not os.path.exists(header):
        pytest.skip("needs the x86_64 kernel headers")
    with open(header) as f:
        text = f.read()
    for name, number in numa.SYSCALLS["x86_64"].items():
        assert re.search(rf"#define __NR_{name} {number}\b", text)


def test_unknown_node_error_lists_the_allowed_nodes():
    with pytest.raises(NumaError, match=r"pool 'slow': NUMA node 999 does not exist on this "
                                        r"machine; the nodes allowed here are 0") as info:
        numa.check_node(999, who="pool 'slow'")
    assert "--bind" in info.value.hint


def test_binding_a_mapping_to_node_0_puts_its_pages_there():
    page = numa.page_nbytes()
    address = numa.map_anonymous(8 * page)
    try:
        numa.bind(address, 8 * page, 0)
        assert numa.policy_of(address) == (numa.MPOL_BIND, [0])
        pages = [address + i * page for i in range(8)]
        assert all(status < 0 for status in numa.page_nodes(pages))  # not faulted in yet
        buffer = (ctypes.c_uint8 * (8 * page)).from_address(address)
        np.ctypeslib.as_array(buffer)[::page] = 1
        assert numa.page_nodes(pages) == [0] * 8
        assert numa.node_of(address) == 0
    finally:
        numa.unmap(address, 8 * page)


def test_binding_to_a_missing_node_fails_loudly():
    page = numa.page_nbytes()
    address = numa.map_anonymous(page)
    try:
        with pytest.raises(NumaError, match=r"mbind .* node 1000 failed"):
            numa.bind(address, page, 1000)
    finally:
        numa.unmap(address, page)


def test_space_arenas_are_exact_bound_and_prefaulted():
    with Space([ArenaRequest("dram", 100_000, 0), ArenaRequest("pmm", 3 * 4096, 0)]) as space:
        dram, pmm = space.arenas["dram"], space.arenas["pmm"]
        assert (dram.nbytes, len(dram.memory)) == (100_000, 100_000)
        assert pmm.base % numa.page_nbytes() == 0 and pmm.base >= dram.nbytes
        huge = numa.huge_page_nbytes()
        if huge is not None:  # arenas start on huge-page boundaries, as the mapping does
            assert space.address % huge == 0 and pmm.base % huge == 0
        assert dram.binding.verified and pmm.binding.verified
        assert dram.binding.sampled_pages > 1
        dram.view(99_000, 1000)[:] = 7
        assert space.bytes[99_000] == 7
        with pytest.raises(Exception, match="outside its 100000 bytes"):
            dram.view(99_999, 2)
    assert space.address == 0
