"""Which placements of a kernel's tensors are profiled.

All of them when there are few enough: the product of each tensor's allowed
pools (AutoTM's ``2^k`` on two pools). Above ``max_configs`` the set is
restricted to, in this order and without repeats:

1. for each pool: every tensor in that pool (or, where it may not live there,
   in its fastest allowed pool);
2. every tensor in its fastest allowed pool except one, which is in another
   pool it may live in (each tensor, each such pool).

That is at most ``P + k (P - 1)`` configurations for ``k`` tensors on ``P``
pools: the uniform placements and every single deviation from all-fast. A
cost table allows only the configurations it lists, so a planner may then pick
only those for that kernel.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

DEFAULT_MAX_CONFIGS = 256
"""Most configurations profiled per kernel before the set is restricted."""


def kernel_configs(
    allowed: Sequence[Sequence[int]], *, n_pools: int, max_configs: int = DEFAULT_MAX_CONFIGS
) -> tuple[npt.NDArray[np.int8], bool]:
    """The configurations to profile (rows of pool positions) and whether they were restricted.

    ``allowed[i]`` lists the pool positions tensor ``i`` may live in, fastest first.
    """
    width = len(allowed)
    if math.prod(len(a) for a in allowed) <= max_configs:
        rows = list(itertools.product(*allowed))
        return np.array(rows, dtype=np.int8).reshape(len(rows), width), False
    fastest = [a[0] for a in allowed]
    rows = []
    for pool in range(n_pools):
        rows.append(tuple(pool if pool in a else a[0] for a in allowed))
    for i, choices in enumerate(allowed):
        for pool in choices[1:]:
            row = list(fastest)
            row[i] = pool
            rows.append(tuple(row))
    unique = list(dict.fromkeys(rows))
    return np.array(unique, dtype=np.int8).reshape(len(unique), width), True
