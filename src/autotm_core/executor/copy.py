"""Copies between arenas: synchronous ones on the calling thread, asynchronous ones on a thread.

:func:`copy_for` picks the copy for a size, once per move: ``numpy.copyto`` (a
``memcpy``) below :func:`streaming_nbytes`, half the last-level cache, where the
target is best left in the caches for the next kernel; from there on
:func:`~autotm_core.executor.stream.stream_copy` (numba, non-temporal stores),
whose speed does not depend on how the source and target are aligned. Both
release the GIL, so the copy thread runs while the replay kernels (numba,
``nogil``) run on the main thread. The copy thread takes copies in order
(FIFO); each submission gets a ticket, and :meth:`CopyThread.wait` blocks until
that ticket's copy, and every earlier one, is done.
"""

from __future__ import annotations

import functools
import queue
import threading
import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from autotm_core.errors import ExecutionError

Bytes = npt.NDArray[np.uint8]
Copy = Callable[[Bytes, Bytes], object]
"""``copy(target, source)``: copy the bytes of ``source`` into ``target`` (same size)."""

STREAMING_FALLBACK_NBYTES = 8 << 20
"""Streaming threshold when the machine reports no cache size."""


@functools.cache
def streaming_nbytes() -> int:
    """Copies of at least this many bytes stream past the caches: half the last-level cache.

    A larger copy cannot leave its target in the cache for the next kernel anyway;
    streaming it skips reading the target's lines first and evicts nothing.
    """
    from autotm_core.executor.numa import last_level_cache_nbytes

    cache = last_level_cache_nbytes()
    return cache // 2 if cache else STREAMING_FALLBACK_NBYTES


def copy_for(nbytes: int) -> Copy:
    """The copy to use for ``nbytes`` (see the module doc)."""
    if nbytes < streaming_nbytes():
        return np.copyto
    from autotm_core.executor.stream import stream_copy

    return stream_copy


def copy_now(source: Bytes, target: Bytes) -> None:
    """Copy ``source`` into ``target`` now, as a synchronous move of its size would."""
    copy_for(source.nbytes)(target, source)


class CopyThread:
    """One background thread doing asynchronous copies in submission order."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Bytes, Bytes] | None] = queue.SimpleQueue()
        self._done = threading.Condition()
        self.submitted = 0
        """Copies submitted so far (the next ticket)."""
        self.completed = 0
        """Copies finished so far."""
        self.copy_ns = 0
        """Nanoseconds the thread spent copying (its own CPU time: other processes taking the
        core away do not count)."""
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name="autotm-copy", daemon=True)
        self._thread.start()

    def submit(self, source: Bytes, target: Bytes) -> int:
        """Queue a copy; returns its ticket."""
        self._queue.put((source, target))
        self.submitted += 1
        return self.submitted

    def wait(self, ticket: int) -> None:
        """Block until copy ``ticket`` (and every one before it) is done."""
        if self.completed >= ticket:  # the common case, without taking the lock
            return
        with self._done:
            while self.completed < ticket and self._error is None:
                self._done.wait()
        if self._error is not None:
            raise ExecutionError(
                f"an asynchronous copy failed: {self._error}",
                hint="this is a bug in autotm-core's executor; report it",
            ) from self._error

    def drain(self) -> None:
        """Block until every submitted copy is done."""
        self.wait(self.submitted)

    def close(self) -> None:
        """Finish the queued copies and stop the thread."""
        self._queue.put(None)
        self._thread.join()

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                start = time.thread_time_ns()
                copy_now(item[0], item[1])
                self.copy_ns += time.thread_time_ns() - start
            except BaseException as exc:  # handed to the waiting thread
                self._error = exc
            with self._done:
                self.completed += 1
                self._done.notify_all()

    def __enter__(self) -> CopyThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
