"""The knee of a trade-off curve: where more fast memory stops paying for itself.

The curve is slowdown against fast-memory bytes, falling as memory grows. Both
axes are scaled to 0..1 and the knee is the point farthest from the straight
line joining the curve's two ends (the "Kneedle" idea, Satopää et al. 2011):
left of it each byte buys a lot of speed, right of it little.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MIN_POINTS = 3
"""A curve needs at least this many points to have a knee."""


def find_knee(points: Sequence[tuple[float, float]]) -> int | None:
    """Index in ``points`` (x, y) of the knee; ``None`` with fewer than 3 points or a flat curve."""
    if len(points) < MIN_POINTS:
        return None
    order = sorted(range(len(points)), key=lambda i: points[i][0])
    xy = np.asarray([points[i] for i in order], dtype=np.float64)
    span = xy.max(axis=0) - xy.min(axis=0)
    if span[0] <= 0 or span[1] <= 0:
        return None
    unit = (xy - xy.min(axis=0)) / span
    start, end = unit[0], unit[-1]
    direction = (end - start) / np.linalg.norm(end - start)
    offsets = unit - start
    distance = np.abs(offsets[:, 0] * direction[1] - offsets[:, 1] * direction[0])
    best = int(np.argmax(distance[1:-1])) + 1
    if distance[best] <= 1e-9:
        return None
    return order[best]
