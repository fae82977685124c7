"""NUMA memory through raw Linux system calls (ctypes), trusting nothing that can fall back.

libnuma's node allocation silently falls back to another node when the one
asked for is full or missing; here every step either does what was asked or
raises :class:`~autotm_core.errors.NumaError`:

- :func:`allowed_nodes`: nodes that are online (``/sys/devices/system/node``)
  and in this process's ``Mems_allowed`` (cpusets, containers);
  :func:`node_memory_nbytes`: how much memory a node has in all;
- :func:`map_anonymous` / :func:`unmap`: an anonymous private mapping;
- :func:`last_level_cache_nbytes`: the largest cache the kernel reports;
- :func:`huge_page_nbytes` / :func:`advise_huge_pages`: transparent huge pages
  for a range, where the kernel offers them (``madvise(MADV_HUGEPAGE)``, as
  NumPy does for its own large arrays): fewer TLB misses when streaming;
- :func:`bind`: ``mbind(MPOL_BIND)`` of a range to one node, with a nodemask
  wide enough for any node number the kernel accepts;
- :func:`policy_of` (``get_mempolicy`` with ``MPOL_F_ADDR``) and
  :func:`page_nodes` (``move_pages`` with no target, which only reports): where
  the policy says a page goes, and where each page really is.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import platform
import re

from autotm_core.errors import NumaError, UsageError
from autotm_core.units import parse_size

SYSCALLS: dict[str, dict[str, int]] = {
    "x86_64": {"mbind": 237, "get_mempolicy": 239, "move_pages": 279},
    "aarch64": {"mbind": 235, "get_mempolicy": 236, "move_pages": 239},
}
"""System call numbers per machine (``asm/unistd_64.h`` on x86_64; the generic table on aarch64)."""

PROT_READ, PROT_WRITE = 0x1, 0x2
MAP_PRIVATE, MAP_ANONYMOUS = 0x02, 0x20
MPOL_DEFAULT, MPOL_BIND = 0, 2
MPOL_F_NODE, MPOL_F_ADDR = 0x1, 0x2
MPOL_MF_STRICT = 0x1
MADV_HUGEPAGE = 14
_THP_ROOT = "/sys/kernel/mm/transparent_hugepage"

MASK_BITS = 1024
"""Bits of the nodemasks passed to the kernel (its ``MAX_NUMNODES`` is at most 1024)."""
_WORD_BITS = 8 * ctypes.sizeof(ctypes.c_ulong)
_MASK_WORDS = MASK_BITS // _WORD_BITS
_MAXNODE = MASK_BITS + 1  # the kernel reads maxnode - 1 bits, as libnuma passes them
_NODE_ROOT = "/sys/devices/system/node"


def page_nbytes() -> int:
    """Size of a memory page on this machine."""
    return os.sysconf("SC_PAGE_SIZE")


def parse_node_list(text: str) -> list[int]:
    """Node numbers of a kernel list such as ``"0-3,5"`` (empty text: none)."""
    nodes: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        nodes.extend(range(int(lo), int(hi or lo) + 1))
    return nodes


@functools.cache
def allowed_nodes() -> tuple[int, ...]:
    """NUMA nodes this process may bind memory to: online and in its ``Mems_allowed``."""
    try:
        with open(os.path.join(_NODE_ROOT, "online")) as f:
            online = set(parse_node_list(f.read()))
    except OSError:
        online = {0}  # a kernel without NUMA support has exactly one node
    allowed = online
    try:
        with open("/proc/self/status") as f:
            match = re.search(r"^Mems_allowed_list:\s*(\S*)", f.read(), re.MULTILINE)
        if match:
            allowed = online & set(parse_node_list(match.group(1)))
    except OSError:
        pass
    return tuple(sorted(allowed))


def node_memory_nbytes(node: int) -> int | None:
    """Bytes of memory NUMA node ``node`` has in all (its ``meminfo``), if the kernel says."""
    try:
        with open(os.path.join(_NODE_ROOT, f"node{node}", "meminfo")) as f:
            for line in f:
                if "MemTotal:" in line:
                    return int(line.split()[-2]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_node(node: int, *, who: str) -> int:
    """``node`` when this process may bind to it; else a :class:`NumaError` naming ``who``."""
    nodes = allowed_nodes()
    if isinstance(node, bool) or not isinstance(node, int) or node not in nodes:
        exists = isinstance(node, int) and os.path.isdir(os.path.join(_NODE_ROOT, f"node{node}"))
        why = "is not allowed to this process" if exists else "does not exist on this machine"
        raise NumaError(
            f"{who}: NUMA node {node!r} {why}; the nodes allowed here are "
            f"{', '.join(map(str, nodes)) or 'none'}",
            hint="give the pool one of those nodes (--bind POOL=NODE, or numa_node in the "
            "memory-system file)",
        )
    return node


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.restype = ctypes.c_int
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.madvise.restype = ctypes.c_int
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return libc


def _number(name: str) -> int:
    machine = platform.machine()
    try:
        return SYSCALLS[machine][name]
    except KeyError:
        raise NumaError(
            f"NUMA binding is not supported on {machine!r} (known: {', '.join(SYSCALLS)})",
            hint="run on x86_64 or aarch64 Linux",
        ) from None


def _fail(what: str) -> NumaError:
    errno = ctypes.get_errno()
    return NumaError(f"{what} failed: {os.strerror(errno)} (errno {errno})",
                     hint="check the node has free memory and the process may use it")


def map_anonymous(nbytes: int) -> int:
    """Address of a new private anonymous read-write mapping of ``nbytes`` (not yet faulted)."""
    address = _libc().mmap(None, nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0)
    if address is None or address == ctypes.c_void_p(-1).value:
        raise _fail(f"mmap of {nbytes} bytes")
    return int(address)


def last_level_cache_nbytes() -> int | None:
    """Largest cache this machine reports for CPU 0 (``/sys/devices/system/cpu``), if any."""
    sizes = []
    for path in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        try:
            with open(path) as f:
                sizes.append(parse_size(f.read().strip().replace("K", "KiB").replace("M", "MiB")))
        except (OSError, ValueError, UsageError):
            continue
    return max(sizes) if sizes else None


def huge_page_nbytes() -> int | None:
    """Size of a transparent huge page, when ``madvise`` can ask for them here (else None)."""
    try:
        with open(f"{_THP_ROOT}/enabled") as f:
            if "[never]" in f.read():
                return None
        with open(f"{_THP_ROOT}/hpage_pmd_size") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def advise_huge_pages(address: int, nbytes: int) -> bool:
    """Ask for transparent huge pages over ``[address, address + nbytes)``; False if refused.

    Only a hint: the kernel falls back to small pages when it has no huge page free.
    """
    return _libc().madvise(ctypes.c_void_p(address), nbytes, MADV_HUGEPAGE) == 0


def unmap(address: int, nbytes: int) -> None:
    """Release a mapping made by :func:`map_anonymous`."""
    if _libc().munmap(ctypes.c_void_p(address), nbytes) != 0:
        raise _fail(f"munmap of {nbytes} bytes at {address:#x}")


def _mask(nodes: list[int]) -> ctypes.Array[ctypes.c_ulong]:
    mask = (ctypes.c_ulong * _MASK_WORDS)()
    for node in nodes:
        mask[node // _WORD_BITS] |= 1 << (node % _WORD_BITS)
    return mask


def bind(address: int, nbytes: int, node: int) -> None:
    """Bind ``[address, address + nbytes)`` (page-aligned) to ``node`` with ``MPOL_BIND``."""
    mask = _mask([node])
    result = _libc().syscall(
        _number("mbind"), ctypes.c_void_p(address), ctypes.c_ulong(nbytes), ctypes.c_int(MPOL_BIND),
        mask, ctypes.c_ulong(_MAXNODE), ctypes.c_uint(MPOL_MF_STRICT),
    )
    if result != 0:
        raise _fail(f"mbind of {nbytes} bytes to node {node}")


def policy_of(address: int) -> tuple[int, list[int]]:
    """Memory policy mode and nodes of the mapping holding ``address``."""
    mode = ctypes.c_int(-1)
    mask = _mask([])
    result = _libc().syscall(
        _number("get_mempolicy"), ctypes.byref(mode), mask, ctypes.c_ulong(_MAXNODE),
        ctypes.c_void_p(address), ctypes.c_ulong(MPOL_F_ADDR),
    )
    if result != 0:
        raise _fail(f"get_mempolicy at {address:#x}")
    nodes = [w * _WORD_BITS + b for w in range(_MASK_WORDS) for b in range(_WORD_BITS)
             if mask[w] >> b & 1]
    return mode.value, nodes


def node_of(address: int) -> int:
    """Node of the page holding ``address`` (``get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR)``)."""
    node = ctypes.c_int(-1)
    result = _libc().syscall(
        _number("get_mempolicy"), ctypes.byref(node), None, ctypes.c_ulong(0),
        ctypes.c_void_p(address), ctypes.c_ulong(MPOL_F_NODE | MPOL_F_ADDR),
    )
    if result != 0:
        raise _fail(f"get_mempolicy(MPOL_F_NODE) at {address:#x}")
    return node.value


def page_nodes(addresses: list[int]) -> list[int]:
    """Node of each page (``move_pages`` with no target nodes; ``-errno`` if not present)."""
    count = len(addresses)
    pages = (ctypes.c_void_p * count)(*addresses)
    status = (ctypes.c_int * count)()
    result = _libc().syscall(
        _number("move_pages"), ctypes.c_int(0), ctypes.c_ulong(count), pages, None, status,
        ctypes.c_int(0),
    )
    if result < 0:
        raise _fail(f"move_pages query of {count} pages")
    return list(status)
