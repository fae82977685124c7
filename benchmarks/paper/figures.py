"""The paper's published figures the evaluation is compared with (see REFERENCE.md)."""

from __future__ import annotations

PAPER_AUTOTM_GEOMEAN_SLOWDOWN = 0.277
"""AutoTM's geometric-mean slowdown against all-DRAM over the conventional networks and
ratios on Optane (Hildebrand et al., ASPLOS 2020)."""
PAPER_FIRST_TOUCH_GEOMEAN_SLOWDOWN = 0.719
"""First-touch NUMA's geometric-mean slowdown, same setting."""
PAPER_SPEEDUP_OVER_2LM = 2.0
"""AutoTM's speedup over 2LM (DRAM as a hardware cache) on the large networks (up to 3x on
DenseNet in the authors' notes)."""
PAPER_PMM_REPLACED = "50-80%"
"""Share of DRAM that AutoTM replaced by PMM."""
