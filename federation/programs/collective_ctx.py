"""The writing side of :mod:`federation.programs.collectives`: what an algorithm writes
through (:class:`Ctx`), what a traced run records (:class:`Trace`), MPICH's thresholds.

Kept apart from the algorithms (:mod:`federation.programs.collective_algorithms`) and the
public calls so that neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from federation.programs.builder import ProgramBuilder
from federation.programs.model import RECV, SEND

#: MPICH 3.3's defaults of the thresholds its ``MPIR_<Op>_intra_auto`` functions compare
#: with (the ``MPIR_CVAR_*`` control variables, bytes; ``BCAST_MIN_PROCS`` in ranks)
MPICH_THRESHOLDS: dict[str, int] = {
    "BCAST_SHORT_MSG_SIZE": 12288,
    "BCAST_LONG_MSG_SIZE": 524288,
    "BCAST_MIN_PROCS": 8,
    "ALLREDUCE_SHORT_MSG_SIZE": 2048,
    "REDUCE_SHORT_MSG_SIZE": 2048,
    "ALLGATHER_SHORT_MSG_SIZE": 81920,
    "ALLGATHER_LONG_MSG_SIZE": 524288,
    "ALLTOALL_SHORT_MSG_SIZE": 256,
    "ALLTOALL_MEDIUM_MSG_SIZE": 32768,
    "ALLTOALL_THROTTLE": 32,
}

def is_pof2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def pof2_floor(n: int) -> int:
    """The largest power of two not above ``n`` (``n >= 1``)."""
    return 1 << (n.bit_length() - 1)


class _BuilderSink:
    """A :class:`ProgramBuilder` seen as the assembler's two calls (one rank at a time)."""

    def __init__(self, b: ProgramBuilder) -> None:
        self.b = b
        self.n_ranks = b.n_ranks

    def op(self, ranks: np.ndarray, kind: int, peer: np.ndarray | int = -1,
           nbytes: np.ndarray | int = 0, tag: np.ndarray | int = 0,
           time_ps: np.ndarray | int = 0, *, blocking: bool = True) -> np.ndarray:
        k = len(ranks)
        cols = [np.broadcast_to(np.asarray(v), (k,)).tolist()
                for v in (peer, nbytes, tag, time_ps)]
        out = np.empty(k, dtype=np.int64)
        for i, (r, pe, nb, t, tp) in enumerate(zip(np.asarray(ranks).tolist(), *cols,
                                                   strict=True)):
            out[i] = self.b.rank(r)._seq(kind, pe, nb, t, tp, blocking)
        return out

    def wait(self, ranks: np.ndarray, handles: np.ndarray) -> None:
        for r, h in zip(np.asarray(ranks).tolist(), np.asarray(handles).tolist(), strict=True):
            self.b.rank(r).wait(h)

    def begin_collective(self, ranks: np.ndarray) -> list[tuple[Any, int]]:
        return self.b.begin_collective(ranks)

    def end_collective(self, token: list[tuple[Any, int]]) -> None:
        self.b.end_collective(token)


@contextmanager
def collective_ops(sink: Any, comm: np.ndarray) -> Iterator[None]:
    """The operations written into ``sink`` inside this block for the ranks of ``comm`` are a
    collective's (``RankPrograms.op_coll``: QoS's ``class_by``).  A sink without
    ``begin_collective`` (a caller's own) marks nothing."""
    begin = getattr(sink, "begin_collective", None)
    token = begin(comm) if begin is not None else None
    yield
    if token is not None:
        sink.end_collective(token)


@dataclass
class Trace:
    """What each send carries, for data-flow checks (tests): ``sends`` lists, per send call,
    (global ranks, handles, block masks); a mask's bit ``b`` is block ``b`` of the
    collective's buffer (``blocks`` of them; -1: everything the sender holds)."""

    blocks: int = 1
    sends: list[tuple[np.ndarray, np.ndarray, list[int]]] = field(default_factory=list)


class Ctx:
    """One collective being written: the communicators (``comm``, m x p global ranks), the
    sink, the tags used.  Algorithms work on *positions* (0 .. p-1) as NumPy arrays; each call
    applies to that position in every communicator."""

    def __init__(self, sink: Any, comm: np.ndarray, tag: int, trace: Trace | None) -> None:
        self.sink = sink
        self.comm = comm
        self.m, self.p = comm.shape
        self.tag0 = tag
        self.top = tag - 1
        self.trace = trace

    def _rep(self, v: np.ndarray | int, k: int) -> np.ndarray:
        return np.broadcast_to(np.asarray(v, dtype=np.int64), (self.m, k)).reshape(-1)

    def op(self, kind: int, local: np.ndarray, peer: np.ndarray, nbytes: np.ndarray | int,
           step: int, blocking: bool = True,
           blocks: Callable[[], list[int]] | None = None) -> np.ndarray:
        """``kind`` at positions ``local`` with ``peer`` positions, tag ``tag0 + step``."""
        local = np.asarray(local, dtype=np.int64)
        k = local.shape[0]
        if k == 0:
            return np.zeros(0, dtype=np.int64)
        tag = self.tag0 + step
        self.top = max(self.top, tag)
        ranks = self.comm[:, local].reshape(-1)
        peers = self.comm[:, np.broadcast_to(np.asarray(peer, dtype=np.int64), (k,))]
        h = np.asarray(self.sink.op(ranks, kind, peers.reshape(-1), self._rep(nbytes, k), tag,
                                    blocking=blocking), dtype=np.int64)
        if self.trace is not None and kind == SEND:
            masks = blocks() if blocks is not None else [-1] * k
            self.trace.sends.append((ranks, h, list(masks) * self.m))
        return h

    def wait(self, local: np.ndarray, handles: np.ndarray) -> None:
        local = np.asarray(local, dtype=np.int64)
        if local.shape[0]:
            self.sink.wait(self.comm[:, local].reshape(-1), handles)

    def send(self, local: np.ndarray, peer: np.ndarray, nbytes: np.ndarray | int, step: int,
             blocks: Callable[[], list[int]] | None = None) -> None:
        """Blocking send (MPIC_Send)."""
        self.op(SEND, local, peer, nbytes, step, True, blocks)

    def recv(self, local: np.ndarray, peer: np.ndarray, nbytes: np.ndarray | int,
             step: int) -> None:
        """Blocking receive (MPIC_Recv)."""
        self.op(RECV, local, peer, nbytes, step, True)

    def sendrecv(self, local: np.ndarray, dst: np.ndarray, send_bytes: np.ndarray | int,
                 src: np.ndarray, recv_bytes: np.ndarray | int, step: int,
                 blocks: Callable[[], list[int]] | None = None) -> None:
        """MPICH's ``MPIC_Sendrecv``: irecv, isend, wait for both."""
        hr = self.op(RECV, local, src, recv_bytes, step, False)
        hs = self.op(SEND, local, dst, send_bytes, step, False, blocks)
        self.wait(local, hr)
        self.wait(local, hs)

    def note_blocks(self, n: int) -> None:
        if self.trace is not None:
            self.trace.blocks = n


__all__ = ["MPICH_THRESHOLDS", "Ctx", "Trace", "is_pof2", "pof2_floor"]
