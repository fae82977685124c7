"""Executors for sweeps: local processes, or a Dask distributed cluster.

Both are ``concurrent.futures.Executor``\\ s that :func:`~autotm_core.sweep.run.run_sweep`
submits points to; a point carries only text, and each worker loads the graph,
the memory system and the costs itself (once per process), so results equal a
serial run's. Dask is the optional ``cluster`` extra, imported only here.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
from collections.abc import Iterator

from autotm_core.errors import ResourceError, UsageError


@contextlib.contextmanager
def local_executor(workers: int | None = None) -> Iterator[concurrent.futures.Executor]:
    """A pool of ``workers`` local processes (default: the number of CPUs), shut down after."""
    n = workers or os.cpu_count() or 1
    if n < 1:
        raise UsageError(f"cannot run a sweep on {n} workers", hint="give --workers 1 or more")
    # spawn: a fresh interpreter per worker, safe with the solver's threads (fork is not)
    context = multiprocessing.get_context("spawn")
    pool = concurrent.futures.ProcessPoolExecutor(max_workers=n, mp_context=context)
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def dask_executor(address: str, *,
                  timeout_seconds: float = 30.0) -> Iterator[concurrent.futures.Executor]:
    """An executor on the Dask scheduler at ``address`` (e.g. ``tcp://10.0.0.5:8786``).

    ``timeout_seconds`` bounds the wait for the scheduler to answer.
    """
    try:
        from distributed import Client
    except ImportError:
        raise ResourceError(
            "running a sweep on a Dask cluster needs dask.distributed",
            hint="install the cluster extra: pip install autotm-core[cluster]",
        ) from None
    try:
        client = Client(address, timeout=timeout_seconds)
    except (OSError, TimeoutError) as exc:
        raise ResourceError(f"cannot reach the Dask scheduler at {address!r}: {exc}",
                         hint="check the address (tcp://HOST:PORT) and that the scheduler "
                         "is running") from None
    try:
        # pure=False: each point is planned once even when two sweeps submit it
        yield client.get_executor(pure=False)
    finally:
        client.close()
