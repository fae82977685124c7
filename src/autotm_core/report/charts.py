"""Terminal charts drawn with block characters."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from rich.text import Text

from autotm_core.units import format_bytes

_BLOCKS = " ▁▂▃▄▅▆▇█"


CHART_MARGIN = 16
"""Columns a report leaves beside its charts for their labels: a chart ``width`` wide sits
on a console ``width + CHART_MARGIN`` wide."""


def bucket_max(values: npt.ArrayLike, width: int) -> npt.NDArray[np.float64]:
    """``values`` reduced to at most ``width`` points, each the maximum of its bucket."""
    data = np.asarray(values, dtype=np.float64)
    if len(data) <= width:
        return data
    edges = np.linspace(0, len(data), width + 1).astype(np.int64)
    return np.maximum.reduceat(data, edges[:-1])


def memory_chart(
    values: npt.ArrayLike,
    *,
    width: int = 72,
    height: int = 8,
    capacity: int | None = None,
    style: str = "cyan",
    title: str = "",
) -> Text:
    """A column chart of bytes over kernels, rising from zero (the bottom row's label); a
    dashed row marks ``capacity`` when given, named at the end of its row, or in the title
    when the row would be wider than ``width + CHART_MARGIN``."""
    data = bucket_max(values, width)
    n = len(data)
    top = float(max(data.max() if n else 0.0, capacity or 0, 1))
    levels = data / top * height * 8  # eighths of a row
    cap_row = None if capacity is None else min(height - 1, int(capacity / top * height))
    cap_label = f" capacity {format_bytes(capacity or 0)}"
    if cap_row is not None and 13 + n + len(cap_label) > width + CHART_MARGIN:
        # no room at the end of its row: say it in the title, not on a line of its own
        title = (title + ";" if title else "") + f"{cap_label} (dashed)"
        cap_label = ""
    text = Text()
    if title:
        text.append(title + "\n", style="bold")
    for row in reversed(range(height)):
        # the top row's label is the chart's top; the columns rise from zero
        label = format_bytes(top) if row == height - 1 else "0 B" if row == 0 else ""
        text.append(f"{label:>11} │", style="dim")
        for col in range(n):
            fill = int(min(8, max(0, levels[col] - row * 8)))
            if fill == 0 and cap_row == row:
                text.append("╌", style="red")
            else:
                over = capacity and data[col] > capacity
                text.append(_BLOCKS[fill], style="red" if over else style)
        if cap_row == row and cap_label:
            text.append(cap_label, style="red")
        text.append("\n")
    total = len(np.asarray(values))
    text.append(" " * 12 + "└" + "─" * n + "\n", style="dim")
    text.append(" " * 13 + f"kernel 0{'':>{max(0, n - 16)}}{total - 1}\n", style="dim")
    return text
