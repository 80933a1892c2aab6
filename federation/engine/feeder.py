"""The driver's helper thread: it draws the next chunks of open-loop packets and folds the
loop's delivery records while the compiled loop runs.

The loop is native code called through ctypes, which lets go of Python's interpreter lock for
the call, so another thread of the process runs Python and NumPy meanwhile.  Drawing a chunk
(the workload's messages, packets, intermediates, injection VCs) and folding the records of
delivered packets (sums, latency histograms, message completions, the tables) were 35-40 % of
an open-loop run on BookSim's p=4 dragonfly, every second of it with the loop stopped; here
they overlap the loop on a second core.  On one core they take their turns, as before.

Nothing changes in what is computed or in which order: one helper runs its tasks in the order
they were handed to it (the chunks are drawn one after the other, from the same generator and
random stream; the sink gets each chunk's messages before the records of its packets, and the
records in delivery order), so a run's results are the same to the last digit.  What it costs:
one chunk more in memory (the one being drawn while the next waits to be loaded), and a second
buffer of delivery records (the loop fills one while the helper folds the other).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from federation.engine.packet_stats import PacketSink
from federation.engine.traffic import PacketChunk

__all__ = ["Feeder", "threaded"]


def threaded() -> bool:
    """Whether the helper is a thread (``FEDERATION_FEED_THREAD=0``: every task runs in the
    driver's thread when it is handed over, as before the helper existed; the same results)."""
    return os.environ.get("FEDERATION_FEED_THREAD", "1") != "0"


class _InPlace:
    """An executor that runs each task at once, in the caller's thread."""

    def submit(self, fn: Any, *args: Any) -> Future:
        done: Future = Future()
        try:
            done.set_result(fn(*args))
        except BaseException as exc:  # handed back by result(), as a thread's would be
            done.set_exception(exc)
        return done

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


class Feeder:
    """The next chunk to load (:attr:`ready`), the one after it being drawn, and the folding
    of delivery records, on one helper thread."""

    def __init__(self, chunks: Iterator[PacketChunk], sink: PacketSink) -> None:
        self._chunks = chunks
        self._sink = sink
        self._pool: Any = (ThreadPoolExecutor(max_workers=1, thread_name_prefix="federation-feed")
                           if threaded() else _InPlace())
        #: the chunk the loop loads next (``None``: no more); the first is drawn here, as the
        #: loop needs its first creation time before it starts
        self.ready: PacketChunk | None = next(chunks, None)
        self._ahead: Future | None = (self._pool.submit(next, chunks, None)
                                      if self.ready is not None else None)
        self._folding: Future | None = None  # the last records handed to the sink
        self._spare: np.ndarray | None = None  # the records buffer the helper gave back
        self._sink_tasks: list[Future] = []  # handed to the sink, not checked yet

    def take(self) -> PacketChunk:
        """The ready chunk, for the driver to load now: the sink learns of its messages (in
        turn), the chunk after it becomes ready, and the one after that starts to be drawn."""
        chunk = self.ready
        assert chunk is not None
        self._to_sink(self._sink.loaded, chunk)
        assert self._ahead is not None
        self.ready = self._ahead.result()  # re-raises what drawing it raised
        self._ahead = (self._pool.submit(next, self._chunks, None)
                       if self.ready is not None else None)
        return chunk

    def fold(self, rec: np.ndarray, n: int) -> np.ndarray:
        """Hand the first ``n`` records of the loop's buffer ``rec`` to the sink and return an
        empty buffer of the same shape for the loop (the one handed over before this one,
        once the sink is done with it)."""
        if self._folding is not None:
            self._folding.result()
        spare = self._spare if self._spare is not None else np.zeros_like(rec)
        self._folding = self._to_sink(self._sink.add, rec[:n])
        self._spare = rec
        return spare

    def _to_sink(self, method: Any, arg: Any) -> Future:
        """Hand ``method(arg)`` to the helper; re-raise what an earlier sink task raised."""
        left = []
        for f in self._sink_tasks:
            if f.done():
                f.result()
            else:
                left.append(f)
        task = self._pool.submit(method, arg)
        self._sink_tasks = [*left, task]
        return task

    def close(self) -> None:
        """Wait for every task handed over (re-raising what one raised), then stop the
        helper; the sink is the driver's again."""
        try:
            for f in self._sink_tasks:
                f.result()
            self._sink_tasks = []
            if self._ahead is not None:
                self._ahead.cancel()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Feeder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
