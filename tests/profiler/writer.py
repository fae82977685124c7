"""A cache writer in its own process.

``python -m tests.profiler.writer DIR KEYS ROUNDS TAG SAMPLES``

Writes ``measurement(tag + round)`` for keys ``0..KEYS-1``, ``ROUNDS`` times over,
each with ``SAMPLES`` samples (many make a write long enough to be interrupted).
Prints ``started`` once the first entry is written.
"""

from __future__ import annotations

import sys

from tests.profiler.helpers import key, measurement

from autotm_core.profiler.cache import ProfileCache


def main() -> None:
    directory, keys, rounds, tag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    count = int(sys.argv[5])
    cache = ProfileCache(directory)
    base = 1.0 if tag == "a" else 2.0
    samples = [base] * count
    for r in range(rounds):
        for i in range(keys):
            cache.put(key(i), measurement(base + r * 1e-3), samples_seconds=samples)
            if r == 0 and i == 0:
                print("started", flush=True)


if __name__ == "__main__":
    main()
