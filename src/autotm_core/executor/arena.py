"""Arenas: one NUMA-bound, pre-faulted range of memory per pool, addressed by byte offsets.

All arenas of an execution live in one anonymous mapping (a :class:`Space`),
each starting on a page boundary and bound on its own with ``mbind``, so that
one byte array (and one word array) reaches every pool: the replay kernels
take a byte address instead of one array per tensor. Each arena is exactly its
pool's size; :meth:`Arena.view` refuses anything outside it.

Where the kernel offers transparent huge pages, the mapping asks for them
(``madvise``, as NumPy does for its own large arrays) and every arena starts on
a huge-page boundary and spans whole huge pages: streaming and copying a large
arena then costs no more TLB misses than a NumPy array of the same size.

At set-up every page is touched (so first-touch faults don't pollute
measurements) and the binding is verified twice: the range's policy
(``get_mempolicy(MPOL_F_ADDR)``) must be ``MPOL_BIND`` to the node, and a
sample of pages must really be on it (``move_pages``).
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Sequence

import attrs
import numpy as np
import numpy.typing as npt

from autotm_core.errors import ExecutionError, NumaError
from autotm_core.executor import numa
from autotm_core.units import format_bytes

logger = logging.getLogger(__name__)

SAMPLED_PAGES = 64
"""Pages per arena whose node is checked with ``move_pages`` after pre-faulting."""


@attrs.frozen(slots=True)
class ArenaRequest:
    """An arena to make."""

    name: str
    """Pool (or scratch area) it serves."""
    nbytes: int
    """Its exact size in bytes."""
    node: int
    """NUMA node to bind it to."""


@attrs.frozen(slots=True)
class Binding:
    """What the kernel says about an arena after it was pre-faulted."""

    node: int
    """The node asked for."""
    policy_nodes: tuple[int, ...]
    """Nodes of the range's policy (``get_mempolicy``); ``(node,)`` when bound as asked."""
    sampled_pages: int
    """Pages whose node was queried (``move_pages``)."""
    pages_on_node: int
    """How many of them are on ``node``."""

    @property
    def verified(self) -> bool:
        """Policy and every sampled page on the node asked for."""
        return self.policy_nodes == (self.node,) and self.pages_on_node == self.sampled_pages


@attrs.frozen(slots=True, eq=False)
class Arena:
    """One pool's memory: ``nbytes`` at byte address ``base`` of its :class:`Space`."""

    name: str
    """Pool (or scratch area) name."""
    base: int
    """Byte address of its first byte in the space."""
    nbytes: int
    """Exact size."""
    binding: Binding
    """Where it is, as verified."""
    memory: npt.NDArray[np.uint8] = attrs.field(repr=False)
    """Its bytes."""

    def view(self, offset: int, nbytes: int) -> npt.NDArray[np.uint8]:
        """The ``nbytes`` at ``offset`` inside the arena."""
        if offset < 0 or nbytes < 0 or offset + nbytes > self.nbytes:
            raise ExecutionError(
                f"arena {self.name!r}: bytes {offset}..{offset + nbytes} lie outside its "
                f"{self.nbytes} bytes",
                hint="the plan's offsets must fit the pool's capacity; re-run assign_offsets",
            )
        return self.memory[offset : offset + nbytes]


class Space:
    """One mapping holding every arena; release it with :meth:`close` (or ``with``)."""

    def __init__(self, requests: Sequence[ArenaRequest]) -> None:
        page = numa.page_nbytes()
        huge = numa.huge_page_nbytes()
        unit = huge if huge is not None and huge % page == 0 else page
        spans = [-(-max(request.nbytes, 1) // unit) * unit for request in requests]
        starts = [sum(spans[:i]) for i in range(len(spans))]
        _check_room(requests)
        cursor = sum(spans)
        self._mapping = (numa.map_anonymous(cursor + unit - page), cursor + unit - page)
        self.address = -(-self._mapping[0] // unit) * unit
        """Address of the first arena's first byte (a multiple of the huge page size, if any)."""
        self.nbytes = cursor
        """Bytes of every arena, each rounded up to whole (huge) pages."""
        try:
            if unit != page and not numa.advise_huge_pages(self.address, cursor):
                logger.debug("no transparent huge pages for the arenas: small pages it is")
            buffer = (ctypes.c_uint8 * cursor).from_address(self.address)
            self.bytes: npt.NDArray[np.uint8] = np.ctypeslib.as_array(buffer)
            self.words: npt.NDArray[np.uint64] = self.bytes.view(np.uint64)
            self.arenas: dict[str, Arena] = {}
            for request, start, span in zip(requests, starts, spans, strict=True):
                numa.bind(self.address + start, span, request.node)
                self.bytes[start : start + span : page] = 0  # fault every page in, on its node
                binding = _verify(self.address + start, span, request.node, page)
                if not binding.verified:
                    raise NumaError(
                        f"arena {request.name!r}: asked for node {request.node}, but the policy "
                        f"names nodes {list(binding.policy_nodes)} and {binding.pages_on_node} of "
                        f"{binding.sampled_pages} sampled pages are there",
                        hint="the kernel did not honour the binding; check cpusets and free memory",
                    )
                self.arenas[request.name] = Arena(
                    request.name, start, request.nbytes, binding,
                    self.bytes[start : start + request.nbytes],
                )
                logger.info("arena %s: %s on node %d", request.name,
                            format_bytes(request.nbytes), request.node)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Unmap the memory; every view of it becomes invalid."""
        if self.address:
            self.bytes = self.words = None  # type: ignore[assignment]
            self.arenas = {}
            numa.unmap(*self._mapping)
            self.address = 0

    def __enter__(self) -> Space:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _verify(address: int, span: int, node: int, page: int) -> Binding:
    mode, nodes = numa.policy_of(address)
    pages = span // page
    picks = sorted({i * (pages - 1) // max(1, SAMPLED_PAGES - 1) for i in range(SAMPLED_PAGES)})
    found = numa.page_nodes([address + i * page for i in picks])
    policy = tuple(nodes) if mode == numa.MPOL_BIND else ()
    if numa.node_of(address) != node:
        policy = ()
    return Binding(node, policy, len(picks), sum(1 for f in found if f == node))


def _check_room(requests: Sequence[ArenaRequest]) -> None:
    """Refuse arenas larger than their node's memory, before mapping anything."""
    per_node: dict[int, int] = {}
    for request in requests:
        per_node[request.node] = per_node.get(request.node, 0) + request.nbytes
    for node, nbytes in per_node.items():
        total = numa.node_memory_nbytes(node)
        if total is not None and nbytes > total:
            names = ", ".join(r.name for r in requests if r.node == node)
            raise ExecutionError(
                f"arenas {names} need {format_bytes(nbytes)} on NUMA node {node}, which has "
                f"{format_bytes(total)} in all",
                hint="plan for smaller capacities, or shrink a large pool's arena to what the plan "
                "uses (execute(arena_nbytes=...), 'run --arena POOL=SIZE')",
            )

