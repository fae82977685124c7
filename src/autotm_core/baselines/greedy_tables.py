"""Greedy with a partial cost table: a kernel runs in the cheapest allowed configuration that fits.

For a kernel whose cost table leaves configurations out, greedy cannot simply
want every tensor in the fast pool. Each tensor may be in the fast pool or at
its home (:mod:`.homes`), unless it must be in one of them (a tensor homed in
the fast pool, one that may not live there, a parameter the step's last kernel
writes, a tensor at home before kernel 0). Among the table's configurations that
keep to these, greedy takes the one costing least, counting the kernel's time in
the table, the copies home of the residents it sends home that have no clean copy
there, and each fetch's copy shared over the uses the tensor has left; the first
whose tensors fit the fast pool (evicting by farthest next use, giving nothing up)
is used. A parameter the table wants in the fast pool where greedy cannot fetch it
(kernel 0, or the last kernel writing it) is homed there (:func:`table_pins`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autotm_core.baselines.common import Setting
from autotm_core.baselines.tables import AllowedConfigs

if TYPE_CHECKING:
    from autotm_core.baselines.greedy import _Walk

PLANNER = "baseline/greedy"
"""The greedy planner's name in its plans and errors."""


def configure(walk: _Walk, k: int, touched: list[int]) -> None:
    """Place kernel ``k``'s tensors as its cheapest allowed configuration that fits."""
    allowed = walk.s.allowed
    assert allowed is not None and allowed.restricts(k)  # the walk asks only for these
    options = [_options(walk, t, k) for t in touched]
    rows = allowed.matching(k, options)
    if not rows:
        raise allowed.refusal(PLANNER, k, f"has no allowed configuration greedy can use "
                              f"({_choices(walk, allowed, touched, options)})")
    configs, seconds = allowed.rows(k), allowed.tables[k].seconds
    to_fast, to_home = _copy_seconds(walk, k, touched)
    scored = sorted((float(seconds[r]) + sum(f if p == 0 else h for p, f, h in
                                             zip(configs[r], to_fast, to_home, strict=True)), r)
                    for r in rows)
    touched_set = set(touched)
    overs = []
    for _, r in scored:
        fetch: list[int] = []
        born: list[int] = []
        forced: list[int] = []
        at_home: list[int] = []
        for t, pool in zip(touched, configs[r], strict=True):
            resident, new = walk.fast_start[t] >= 0, walk.is_new(t, k)
            if pool == 0 and not resident:
                (born if new else fetch).append(t)
            elif pool != 0 and resident:
                forced.append(t)
            elif pool != 0 and new:
                at_home.append(t)
        over = max(walk.make_room(k, fetch, born, forced, touched_set, may_give_up=False))
        if over <= 0:
            for t in at_home:
                walk.slow_start[t] = k
            walk.place(k, fetch, born)
            return
        overs.append(over)
    raise walk.shortfall(k, min(overs))


def table_pins(s: Setting) -> set[int]:
    """Parameters, optimizer states and constants to home in the fast pool because a partial
    table wants them there where greedy cannot fetch them: at kernel 0 (nothing is copied
    before it) and, when it writes them, at the last kernel (which must write them home).

    Of each such kernel's allowed configurations (keeping to the pools each tensor may
    live in), the one putting the fewest bytes of them in the fast pool decides.
    """
    allowed, live = s.allowed, s.graph.liveness
    if allowed is None:
        return set()
    pins: set[int] = set()
    ptr, n = live.kernel_ptr.tolist(), len(s.graph.kernels)
    nbytes = live.nbytes.tolist()
    for k in sorted({0, n - 1} & set(allowed.tables)):
        tensors = live.kernel_tensors[ptr[k]:ptr[k + 1]].tolist()
        writes = live.kernel_writes[ptr[k]:ptr[k + 1]].tolist()
        kinds = [s.graph.tensors[t].kind for t in tensors]
        wanted = [kind.exists_before_step and kind.survives_step and (k == 0 or w)
                  for kind, w in zip(kinds, writes, strict=True)]
        rows = allowed.matching(k, [s.positions(t) for t in tensors])
        if not any(wanted) or not rows:
            continue
        configs, seconds = allowed.rows(k), allowed.tables[k].seconds
        nbytes_of = [nbytes[t] for t in tensors]
        _, _, r = min((sum(nb for nb, p, w in zip(nbytes_of, configs[r], wanted, strict=True)
                           if w and p == 0), float(seconds[r]), r) for r in rows)
        best = configs[r]
        pins |= {t for t, p, w in zip(tensors, best, wanted, strict=True) if w and p == 0}
    return pins


def _options(walk: _Walk, t: int, k: int) -> list[int]:
    """The pool positions ``t`` may be in at ``k``: the fast pool (0) and/or its home."""
    home = walk.home[t]
    if walk.pinned[t]:
        return [0]
    resident, new = walk.fast_start[t] >= 0, walk.is_new(t, k)
    if walk.must_be_home(t, k) or not walk.may_be_fast[t] or (k == 0 and not resident and not new):
        return [home]
    return [0, home]


def _copy_seconds(walk: _Walk, k: int, touched: list[int]) -> tuple[list[float], list[float]]:
    """Per tensor of ``k``: what holding it in the fast pool costs in copies (a fetch, shared
    over its uses left) and what sending it home costs (writing a resident without a clean
    copy there)."""
    system = walk.s.system
    to_fast = [0.0] * len(touched)
    to_home = [0.0] * len(touched)
    for i, t in enumerate(touched):
        home, nbytes = walk.home[t], walk.nbytes[t]
        if home <= 0:
            continue
        if walk.fast_start[t] >= 0:
            if walk.slow_start[t] < 0:
                to_home[i] = system.copy_seconds(nbytes, 0, home, asynchronous=False)
        elif not walk.is_new(t, k):
            uses_left = max(1, walk.use_ptr[t + 1] - walk.next_ptr[t])
            to_fast[i] = system.copy_seconds(nbytes, home, 0, asynchronous=False) / uses_left
    return to_fast, to_home


def _choices(walk: _Walk, allowed: AllowedConfigs, touched: list[int],
             options: list[list[int]]) -> str:
    """``x in dram or pmm, w in pmm``: where greedy can hold each tensor of the kernel."""
    return "it can hold " + ", ".join(
        f"{walk.names[t]} in {' or '.join(allowed.pool_names[p] for p in pools)}"
        for t, pools in zip(touched, options, strict=True))
