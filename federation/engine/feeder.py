"""The driver's helper thread: it draws the next chunk of open-loop packets and folds the
loop's delivery records while the compiled loop runs.

The loop is native code called through ctypes, which lets go of Python's interpreter lock for
the call, so another thread of the process runs Python and NumPy meanwhile.  Drawing a chunk
(the workload's messages, packets, intermediates, injection VCs, and its rows of the feed
sorted by node) and folding the records of
delivered packets (sums, latency histograms, message completions, the tables) were 35-40 % of
an open-loop run on BookSim's p=4 dragonfly, every second of it with the loop stopped; here
they overlap the loop on a second core.  On one core they take their turns, as before.

Nothing changes in what is computed or in which order: one helper runs its tasks in the order
they were handed to it (the chunks are drawn one after the other, from the same generator and
random stream; the sink gets each chunk's messages before the records of its packets, and the
records in delivery order), so a run's results are the same to the last digit.  What it costs:
one chunk more in memory (the one being drawn while the loop runs the loaded one), and three
more buffers of delivery records (the loop fills one while the helper folds the others).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from federation.engine.events import TIME_LIMIT_PS
from federation.engine.feed import ChunkRows, chunk_rows
from federation.engine.packet_stats import Ledger, PacketSink
from federation.engine.traffic import PacketChunk

__all__ = ["Feeder", "Ready", "threaded"]

#: delivery-record buffers of a run: the loop fills one while the helper folds the others
RECORD_BUFFERS = 4


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


class Ready(NamedTuple):
    """A drawn chunk as the driver needs it: when the loop must stop to load it, its ledger
    for the sink and its rows of the feed (its packets are let go once the rows are made)."""

    start: int  #: its first packet's creation, ps
    end: int  #: no packet of a later chunk is created before it, ps
    ledger: Ledger
    rows: ChunkRows


class Feeder:
    """The next chunk to load (:attr:`ready`), drawn and made into feed rows on one helper
    thread while the loop runs the one before it, and the folding of delivery records.
    ``check(chunk)`` refuses a chunk the loop cannot take (it runs as the chunk is drawn).

    One chunk ahead, not two: while the helper draws the next chunk the driver does not know
    when that chunk starts, but it knows that no packet is created before the loaded chunk's
    ``end`` (:attr:`stop`), so the loop pauses there if the helper is not done yet
    (:meth:`settle`).  Pausing changes nothing in the run, and the arrays of a second chunk
    ahead (its messages, packets and rows: 7 MB of the 119 MB peak on BookSim's p=4 scenario
    at UR 0.3) are never held."""

    def __init__(self, chunks: Iterator[PacketChunk], sink: PacketSink, n_nodes: int,
                 check: Callable[[PacketChunk], None], vc_need: int = 0) -> None:
        self._chunks = chunks
        self._sink = sink
        self._nodes = n_nodes
        self._need = vc_need  # QoS classes: injection VCs modulo the VCs of a class
        self._check = check
        self._pool: Any = (ThreadPoolExecutor(max_workers=1, thread_name_prefix="federation-feed")
                           if threaded() else _InPlace())
        #: the chunk the loop loads next (``None``: none drawn); the first is drawn here, as
        #: the loop needs its first creation time before it starts
        self.ready: Ready | None = self._make()
        self._next: Future | None = None  # the chunk after the loaded one, being drawn
        self._bound = 0  # no chunk not drawn yet has a packet created before it, ps
        #: the records handed to the sink, oldest first, with their buffers
        self._folds: deque[tuple[Future, np.ndarray]] = deque()
        self._sink_tasks: list[Future] = []  # handed to the sink, not checked yet

    def _make(self) -> Ready | None:
        """The next chunk with packets, checked, with its ledger and feed rows (``None``: no
        more).  A chunk without packets (a workload may yield an empty batch) is passed
        over: its place in time is its ``end``, which the next one's start follows."""
        for chunk in self._chunks:
            self._check(chunk)
            if chunk.packets.count:  # the rows before the ledger: the peak is the rows'
                rows = chunk_rows(chunk, self._nodes, self._need)
                return Ready(int(chunk.packets.time_ps[0]), chunk.end, self._sink.ledger(chunk),
                             rows)
        return None

    @property
    def stop(self) -> int:
        """The time the loop must not pass before the driver turns to the feeder again: the
        ready chunk's start; while the next one is being drawn, the loaded one's end (then
        :meth:`settle`); with no more chunks, never."""
        if self.ready is not None:
            return self.ready.start
        return self._bound if self._next is not None else TIME_LIMIT_PS

    @property
    def more(self) -> bool:
        """Whether a chunk is ready or being drawn."""
        return self.ready is not None or self._next is not None

    def settle(self) -> None:
        """Wait for the chunk being drawn: it becomes :attr:`ready` (or there are no more)."""
        assert self.ready is None and self._next is not None
        nxt, self._next = self._next, None
        self.ready = nxt.result()  # re-raises what drawing it raised

    def take(self) -> ChunkRows:
        """The ready chunk's feed rows, for the driver to load now; the sink learns of its
        messages.  The helper draws the next chunk only when :meth:`resume` says the load is
        done: the load holds the old feed, the new one and these rows at once."""
        ready = self.ready
        assert ready is not None and self._next is None
        self._to_sink(self._sink.loaded, ready.ledger)
        self.ready, self._bound = None, ready.end
        return ready.rows

    def resume(self) -> None:
        """The chunk :meth:`take` gave is loaded: the helper draws the next one (after the
        sink's tasks handed over before, in order, as ever: the same results)."""
        self._next = self._pool.submit(self._make)

    def fold(self, rec: np.ndarray, n: int) -> np.ndarray:
        """Hand the first ``n`` records of the loop's buffer ``rec`` to the sink and return an
        empty buffer of the same shape for the loop: a new one while fewer than
        :data:`RECORD_BUFFERS` exist, else the oldest one handed over, once the sink is done
        with it.  Four, not two: drawing a chunk keeps the helper from the sink for about
        three buffers' worth of loop time (25 ms against 8.6 ms on BookSim's p=4 scenario at
        UR 0.3); the loop waited 0.27 s of a 1.4 s run with two, 0.13 s with three, 0.015 s
        with four (0.85 MB each)."""
        self._folds.append((self._to_sink(self._sink.add, rec[:n]), rec))
        if len(self._folds) < RECORD_BUFFERS:
            return np.zeros_like(rec)
        done, spare = self._folds.popleft()
        done.result()
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
            if self._next is not None:
                self._next.cancel()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Feeder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
