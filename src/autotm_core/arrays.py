"""The NumPy array types the package passes around, named once.

Sizes and positions are ``int64``, times ``float64``, flags ``bool``; hashes of
the executor's checks are ``uint64``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
"""Positions, sizes in bytes, counts."""
FloatArray = npt.NDArray[np.float64]
"""Times in seconds, costs, values of a model's columns."""
BoolArray = npt.NDArray[np.bool_]
"""Flags, one per tensor, kernel or column."""
U64Array = npt.NDArray[np.uint64]
"""Hashes (the executor's checks of the bytes a kernel read)."""
