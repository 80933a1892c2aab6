"""What a program communicates, without simulating it: messages, bytes, who sends to whom.

:func:`communication` reduces any :class:`~federation.programs.model.RankPrograms` (a
workload's, a schedule file's, a trace's) to a :class:`CommSummary`: totals, per-rank sends,
receives and compute, the message sizes, and the rank x rank communication matrix as its
non-zero entries (messages and bytes per ordered pair: a 4,096-rank program has 16 million
pairs, of which a skeleton uses a few per rank).  Every figure is exact and vectorised (one
sort of the sends), so a million-operation program takes a fraction of a second.

Used by ``federation comm`` (a table, ``--json``, ``--plot`` for the heat map); a caller that
counts hops maps the pairs through ``rank_node`` onto the machine's nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from federation.programs.model import COMPUTE, RECV, SEND, RankPrograms


@dataclass(frozen=True)
class CommSummary:
    """A program's communication (see the module docstring).  Arrays are int64; ``pair_*``
    are the non-zero entries of the rank x rank matrix, sorted by source then destination."""

    n_ranks: int
    operations: int
    messages: int  #: sends (each one message)
    bytes: int
    compute_ps: int  #: all ranks' compute, summed
    sends: np.ndarray  #: messages each rank sends
    sent_bytes: np.ndarray
    receives: np.ndarray  #: receives each rank posts
    received_bytes: np.ndarray  #: bytes of the sends addressed to each rank
    rank_compute_ps: np.ndarray
    partners: np.ndarray  #: distinct destinations of each rank
    pair_src: np.ndarray
    pair_dst: np.ndarray
    pair_messages: np.ndarray
    pair_bytes: np.ndarray
    sizes: np.ndarray  #: the distinct message sizes, ascending
    size_counts: np.ndarray  #: how many messages have each
    rank_node: np.ndarray  #: the node of each rank

    def matrix(self, what: str = "bytes", max_side: int | None = None) -> np.ndarray:
        """The dense ``n x n`` matrix of ``bytes`` or ``messages`` (row: source).  With
        ``max_side``, consecutive ranks are summed into at most that many blocks per side
        (block ``i`` holds ranks ``i * k .. i * k + k - 1``, ``k = ceil(n / max_side)``), so a
        heat map of thousands of ranks stays a few hundred pixels."""
        vals = self.pair_bytes if what == "bytes" else self.pair_messages
        n = self.n_ranks
        k = 1 if max_side is None or n <= max_side else -(-n // max_side)
        side = -(-n // k) if n else 0
        out = np.zeros((side, side), dtype=np.int64)
        np.add.at(out, (self.pair_src // k, self.pair_dst // k), vals)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: totals, per-rank arrays, sizes and the matrix's non-zero entries."""
        def stats(a: np.ndarray) -> dict[str, float]:
            if a.size == 0:
                return {"min": 0, "mean": 0.0, "max": 0}
            return {"min": int(a.min()), "mean": float(a.mean()), "max": int(a.max())}

        return {
            "ranks": self.n_ranks, "operations": self.operations, "messages": self.messages,
            "bytes": self.bytes, "compute_ps": self.compute_ps,
            "per_rank": {"sends": self.sends.tolist(), "sent_bytes": self.sent_bytes.tolist(),
                         "receives": self.receives.tolist(),
                         "received_bytes": self.received_bytes.tolist(),
                         "compute_ps": self.rank_compute_ps.tolist(),
                         "partners": self.partners.tolist(),
                         "node": self.rank_node.tolist()},
            "per_rank_stats": {"sends": stats(self.sends), "sent_bytes": stats(self.sent_bytes),
                               "partners": stats(self.partners),
                               "compute_ps": stats(self.rank_compute_ps)},
            "message_sizes": [[int(s), int(c)] for s, c in
                              zip(self.sizes, self.size_counts, strict=True)],
            "matrix": {"columns": ["src", "dst", "messages", "bytes"],
                       "rows": np.stack([self.pair_src, self.pair_dst, self.pair_messages,
                                         self.pair_bytes], axis=1).tolist()},
        }


def communication(progs: RankPrograms) -> CommSummary:
    """The :class:`CommSummary` of ``progs``."""
    n = progs.n_ranks
    rank = progs.op_rank
    snd = progs.op_kind == SEND
    src, dst = rank[snd], progs.op_peer[snd].astype(np.int64)
    size = progs.op_bytes[snd]
    rcv = progs.op_kind == RECV
    comp = progs.op_kind == COMPUTE
    key = src * max(n, 1) + dst
    pairs, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    pair_bytes = _sums(inverse.reshape(-1), size, pairs.size)
    psrc, pdst = pairs // max(n, 1), pairs % max(n, 1)
    sizes, size_counts = np.unique(size, return_counts=True)
    t = progs.op_time_ps[comp]
    return CommSummary(
        n_ranks=n, operations=progs.n_ops, messages=int(snd.sum()), bytes=int(size.sum()),
        compute_ps=int(t.sum()),
        sends=np.bincount(src, minlength=n).astype(np.int64),
        sent_bytes=_sums(src, size, n),
        receives=np.bincount(rank[rcv], minlength=n).astype(np.int64),
        received_bytes=_sums(dst, size, n),
        rank_compute_ps=_sums(rank[comp], t, n),
        partners=np.bincount(psrc, minlength=n).astype(np.int64),
        pair_src=psrc.astype(np.int64), pair_dst=pdst.astype(np.int64),
        pair_messages=counts.astype(np.int64), pair_bytes=pair_bytes,
        sizes=sizes.astype(np.int64), size_counts=size_counts.astype(np.int64),
        rank_node=progs.nodes().astype(np.int64))


def _sums(index: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Exact int64 sums of ``values`` per ``index`` (bincount's float weights would round
    totals above 2^53)."""
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, index, values.astype(np.int64))
    return out


def describe(s: CommSummary, top: int = 5) -> list[str]:
    """The summary as lines of text (what ``federation comm`` prints)."""
    def b(x: float) -> str:
        for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if x >= f:
                return f"{x / f:,.2f} {unit}"
        return f"{x:,.0f} B"

    lines = [f"{s.n_ranks:,} ranks, {s.operations:,} operations, {s.messages:,} messages, "
             f"{b(s.bytes)} ({s.bytes:,} B)"]
    if s.messages:
        med = float(np.repeat(s.sizes, s.size_counts)[s.messages // 2])
        lines.append(f"message sizes: min {b(s.sizes[0])}, median {b(med)}, "
                     f"max {b(s.sizes[-1])}, {s.sizes.size:,} distinct")
    # (figure, values, format of min and max, format of the mean): a mean of counts is a
    # fraction, printed to two places as the sizes are, not as Python's 17 digits
    for name, a, fmt, mean in (("sends per rank", s.sends, "{:,}", "{:,.2f}"),
                               ("bytes sent per rank", s.sent_bytes, None, None),
                               ("destinations per rank", s.partners, "{:,}", "{:,.2f}"),
                               ("compute per rank (ns)", s.rank_compute_ps / 1e3, "{:,.3f}",
                                "{:,.3f}")):
        if a.size:
            f = fmt.format if fmt else b
            m = mean.format if mean else b
            lines.append(f"{name}: min {f(a.min())}, mean {m(float(a.mean()))}, "
                         f"max {f(a.max())}")
    if s.pair_bytes.size:
        order = np.lexsort((s.pair_dst, s.pair_src, -s.pair_bytes))[:top]
        lines.append(f"busiest pairs ({min(top, order.size)} of {s.pair_bytes.size:,}):")
        for i in order:
            lines.append(f"  rank {int(s.pair_src[i])} -> {int(s.pair_dst[i])}: "
                         f"{int(s.pair_messages[i]):,} messages, {b(int(s.pair_bytes[i]))}")
    return lines


__all__ = ["CommSummary", "communication", "describe"]
