"""Copies between arenas: synchronous ones on the calling thread, asynchronous ones on a thread.

Both use ``numpy.copyto`` on byte views, which is a ``memcpy`` that releases the
GIL, so the copy thread runs while the replay kernels (numba, ``nogil``) run on
the main thread. The copy thread takes copies in order (FIFO); each submission
gets a ticket, and :meth:`CopyThread.wait` blocks until that ticket's copy, and
every earlier one, is done.
"""

from __future__ import annotations

import queue
import threading
import time

import numpy as np
import numpy.typing as npt

from autotm_core.errors import ExecutionError

Bytes = npt.NDArray[np.uint8]


def copy_sync(source: Bytes, target: Bytes) -> None:
    """Copy ``source`` into ``target`` now."""
    np.copyto(target, source)


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
                np.copyto(item[1], item[0])
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
