"""Rank programs -> the arrays the compiled loop runs (:class:`~federation.engine.state.Prog`).

Every send of a program is one *message*.  Each message owns three flows, ``3m`` (data),
``3m + 1`` (rendezvous request) and ``3m + 2`` (rendezvous reply); an eager message's control
flows have no packets and are never queued.  Packets are not made here: the loop gives each
one a row of a pool when it reaches its NIC's head and takes it back on delivery, so a run's
memory follows what is in flight (a 64 KiB allreduce of 1,024 ranks sends 65 million
packets).
Matching slots are allocated per channel (source rank, destination rank, tag): the k-th send
started on a channel fills slot k, the k-th receive posted on it too, so a channel needs as
many receives as sends (refused here otherwise, naming the operation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from federation.engine.feed import aligned_rows
from federation.engine.state import OpenPool, Prog
from federation.errors import ConfigError
from federation.programs.model import COMPUTE, RECV, SEND, RankPrograms


@dataclass
class ProgramFigures:
    """The NIC's protocol figures and the packet rules, resolved (bytes, integer ps)."""

    packet_size: int
    eager_threshold: int
    control_bytes: int
    o_send_ps: int = 0
    o_recv_ps: int = 0
    #: injection VC of program packets (``router.injection_vc``): zero, spread or random
    injection_vc: str = "spread"
    #: intermediates of program packets: "none", "group" or "router" (Valiant's rule)
    via: str = "none"
    #: the routing's modes (``Routing.modes``): a send's named mode is its index here
    modes: tuple[str, ...] = ()


@dataclass
class ProgramTraffic:
    """The loop's program state plus what the result tables need of the messages."""

    prog: Prog
    programs: RankPrograms
    #: per message (one per send): source and destination rank and node, bytes, tag, protocol
    msg_src_rank: np.ndarray
    msg_dst_rank: np.ndarray
    msg_src: np.ndarray
    msg_dst: np.ndarray
    msg_size: np.ndarray
    msg_tag: np.ndarray
    msg_rdv: np.ndarray
    #: traffic class of each message's packets
    msg_cls: np.ndarray
    #: operations with no dependency: they begin at time 0
    roots: np.ndarray

    @property
    def n_packets(self) -> int:
        """Packets the programs send in all (data, rendezvous requests and replies)."""
        return int(self.prog.flow_npk.sum()) if int(self.prog.n_ops) else 0


def channels(progs: RankPrograms
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Channel id of every send and receive, numbered in (source, destination, tag) order:
    (send ops, their channels, receive ops, their channels, channel count)."""
    rank = progs.op_rank
    sends = np.nonzero(progs.op_kind == SEND)[0]
    recvs = np.nonzero(progs.op_kind == RECV)[0]
    src = np.concatenate([rank[sends], progs.op_peer[recvs].astype(np.int64)])
    dst = np.concatenate([progs.op_peer[sends].astype(np.int64), rank[recvs]])
    tag = np.concatenate([progs.op_tag[sends], progs.op_tag[recvs]]).astype(np.int64)
    # one int64 key when (source, destination, tag) fit in it: its sort takes a tenth of the
    # three-key lexsort's time (1M operations), and the ids (group numbers in key order) are
    # the same
    n = max(progs.n_ranks, 1)
    lo = int(tag.min()) if tag.size else 0
    width = int(tag.max()) - lo + 1 if tag.size else 1
    if n * n * width < 2**62:
        order = np.argsort((src * n + dst) * width + (tag - lo))
    else:
        order = np.lexsort((tag, dst, src))
    new = np.ones(order.shape[0], dtype=bool)
    if order.shape[0] > 1:
        new[1:] = ((np.diff(src[order]) != 0) | (np.diff(dst[order]) != 0)
                   | (np.diff(tag[order]) != 0))
    cid = np.empty(order.shape[0], dtype=np.int64)
    cid[order] = np.cumsum(new) - 1
    n_chan = int(new.sum())
    return sends, cid[:sends.shape[0]], recvs, cid[sends.shape[0]:], n_chan


def _check_matching(progs: RankPrograms, send_chan: np.ndarray, recvs: np.ndarray,
                    recv_chan: np.ndarray, sends: np.ndarray, n_chan: int) -> None:
    """Each channel needs as many receives as sends; name the first op that cannot match."""
    ns = np.bincount(send_chan, minlength=n_chan)
    nr = np.bincount(recv_chan, minlength=n_chan)
    bad = np.nonzero(ns != nr)[0]
    if not bad.size:
        return
    c = int(bad[0])
    if nr[c] > ns[c]:
        op = int(recvs[recv_chan == c][ns[c]])
        why = f"no send matches it ({int(ns[c])} sends, {int(nr[c])} receives on its channel)"
    else:
        op = int(sends[send_chan == c][nr[c]])
        why = f"no receive matches it ({int(ns[c])} sends, {int(nr[c])} receives on its channel)"
    raise ConfigError(f"{progs.describe(op)}: {why}", source=progs.source, path="workload")


VC_POLICIES = ("zero", "spread", "random")
VIAS = ("none", "group", "router", "node")


def build_traffic(progs: RankPrograms, n_nodes: int, fig: ProgramFigures,
                  router_group: np.ndarray, msg_cls: np.ndarray | None = None
                  ) -> ProgramTraffic:
    """Arrays of :class:`Prog` for ``progs``, whose packets take rows of the packet pool
    (``router_group``: each router's group, for Valiant's intermediates; ``msg_cls``: the
    traffic class of each message, one per send in operation order, default 0)."""
    R, n_ops = progs.n_ranks, progs.n_ops
    node = progs.nodes()
    if node.shape != (R,) or (R and not 0 <= int(node.min()) <= int(node.max()) < n_nodes):
        raise ConfigError(f"rank programs place ranks on nodes outside 0..{n_nodes - 1}",
                          source=progs.source, path="workload")
    rank = progs.op_rank
    sends, send_chan, recvs, recv_chan, n_chan = channels(progs)
    _check_matching(progs, send_chan, recvs, recv_chan, sends, n_chan)
    M = sends.shape[0]
    i64 = np.int64

    # ---- messages and their flows (3 per message)
    # a zero-byte message is one 1 B packet: the loop has no empty packet (a flow of none
    # never completes), and a real network sends a header-only one; every byte counter counts
    # that byte, the messages table the program's 0 (docs/programs.md, the packets table)
    size = np.maximum(progs.op_bytes[sends], 1)
    rdv = (progs.op_bytes[sends] > fig.eager_threshold).astype(np.int8)
    P = fig.packet_size
    npk = np.zeros((M, 3), dtype=i64)
    npk[:, 0] = (size + P - 1) // P
    npk[:, 1] = rdv
    npk[:, 2] = rdv
    flow_npk = npk.reshape(-1)
    src_rank, dst_rank = rank[sends], progs.op_peer[sends].astype(i64)
    s_node, d_node = node[src_rank], node[dst_rank]
    flow_node = np.repeat(s_node, 3).reshape(M, 3)
    flow_node[:, 2] = d_node  # the reply goes from the receiver to the sender
    flow_dst = np.repeat(d_node, 3).reshape(M, 3)
    flow_dst[:, 2] = s_node
    op_msg = np.full(n_ops, -1, dtype=i64)
    op_msg[sends] = np.arange(M, dtype=i64)
    op_chan = np.full(n_ops, -1, dtype=i64)
    op_chan[recvs] = recv_chan

    # ---- dependencies: successor lists, and how many each operation waits for
    # successors grouped by what they wait for, each group in operation order: op i's
    # FINISH successors are succ_op[succ_first[2i]:succ_first[2i + 1]], its START ones follow
    # up to succ_first[2i + 2] (the loop releases a group without testing each edge's kind)
    order = np.lexsort((progs.dep_after, progs.dep_kind, progs.dep_before))
    succ_first = np.zeros(2 * n_ops + 1, dtype=i64)
    np.cumsum(np.bincount(2 * progs.dep_before.astype(i64) + progs.dep_kind,
                          minlength=2 * n_ops), out=succ_first[1:])
    op_wait = np.bincount(progs.dep_after, minlength=n_ops).astype(i64)
    per_rank = np.diff(progs.rank_first).astype(i64)
    chan_first = np.zeros(n_chan + 1, dtype=i64)
    np.cumsum(np.bincount(send_chan, minlength=n_chan), out=chan_first[1:])

    def full(n: int, v: int = -1) -> np.ndarray:
        return np.full(max(n, 0), v, dtype=i64)

    rg = router_group.astype(i64)
    gorder = np.argsort(rg, kind="stable")
    group_first = np.zeros(int(rg.max()) + 2 if rg.size else 1, dtype=i64)
    np.cumsum(np.bincount(rg, minlength=group_first.shape[0] - 1), out=group_first[1:])
    row_flow, free = row_pool(n_nodes)
    # what the loop reads and writes together lives together: each operation's, message's,
    # flow's, channel's and slot's fields are one row (at most one cache line) of a table,
    # and Prog holds column views of it (with one array per field, each message touched
    # some 25 separate lines, most of them missing every cache)
    ops = _table(n_ops, op_kind=progs.op_kind, op_rank=rank,
                 op_time=np.where(progs.op_kind == COMPUTE, progs.op_time_ps, 0),
                 op_msg=op_msg, op_chan=op_chan, op_wait=op_wait, op_start=-1, op_finish=-1)
    cls = np.zeros(M, dtype=i64) if msg_cls is None else np.asarray(msg_cls, dtype=i64)
    if cls.shape != (M,):
        raise ValueError(f"msg_cls has shape {cls.shape}, not one class per message ({M})")
    msgs = _table(M, msg_size=size, msg_chan=send_chan, msg_rdv=rdv, msg_recv=-1,
                  msg_arrived=-1, msg_post=-1, msg_start=-1, msg_finish=-1, msg_cls=cls)
    flows = _table(3 * M, flow_msg=np.repeat(np.arange(M, dtype=i64), 3),
                   flow_op=np.repeat(sends.astype(i64), 3), flow_node=flow_node.reshape(-1),
                   flow_dst=flow_dst.reshape(-1), flow_npk=flow_npk, flow_left=flow_npk,
                   flow_time=-1, flow_next=-1)
    chans = _table(n_chan + 1, chan_first=chan_first, chan_nsend=0, chan_nrecv=0)
    slots = _table(M, slot_msg=-1, slot_recv=-1)
    prog = Prog(
        n_ops=i64(n_ops), o_send=i64(fig.o_send_ps),
        o_recv=i64(fig.o_recv_ps), packet_size=i64(P), control_bytes=i64(fig.control_bytes),
        vc_policy=i64(VC_POLICIES.index(fig.injection_vc)), via_mode=i64(VIAS.index(fig.via)),
        keep=i64(0),
        **ops, op_next=full(n_ops), succ_first=succ_first,
        succ_op=progs.dep_after[order].astype(i64),
        succ_kind=progs.dep_kind[order].astype(np.int8), ready=np.zeros(max(n_ops, 1), i64),
        rank_left=per_rank.copy(), rank_finish=np.where(per_rank == 0, 0, -1).astype(i64),
        cpu_busy=full(R), cpu_head=full(R), cpu_tail=full(R), **msgs, **chans, **slots,
        flow_kind=np.tile(np.arange(3, dtype=np.int8), M), **flows,
        nic_fhead=full(n_nodes), nic_ftail=full(n_nodes), nic_fpos=full(n_nodes, 0),
        nic_frow=full(n_nodes), nic_count=full(n_nodes, 0), kick=full(3 * M + 2, 0),
        fin=full(n_ops + 1, 0), row_flow=row_flow, free=free,
        pstat=np.zeros(8, dtype=i64), router_group=rg, group_first=group_first,
        group_routers=gorder.astype(i64),
        msg_mode=_modes(progs, sends, fig.modes), ctl_on=i64(0), ctl_pend=full(M + 1, 0),
        ctl=NO_CONTROLLER,
    )
    return ProgramTraffic(
        prog=_nonempty(prog), programs=progs,
        msg_src_rank=src_rank.astype(i64), msg_dst_rank=dst_rank, msg_src=s_node.astype(i64),
        msg_dst=d_node.astype(i64), msg_size=progs.op_bytes[sends].astype(i64),
        msg_tag=progs.op_tag[sends].astype(i64), msg_rdv=rdv, msg_cls=cls,
        roots=np.nonzero(op_wait == 0)[0].astype(i64),
    )


#: the controller state of a run without a controller (one type for every such run)
NO_CONTROLLER = (np.zeros(1, dtype=np.int64),)


def _modes(progs: RankPrograms, sends: np.ndarray, modes: tuple[str, ...]) -> np.ndarray:
    """Each message's routing mode: its send's named mode as an index of the routing's
    ``modes`` (-1: the routing's own).  A name the routing lacks is refused, naming the
    operation and the routing's modes (the pipeline checks its own fields before this)."""
    out = np.full(max(sends.shape[0], 1), -1, dtype=np.int64)
    if progs.op_mode is None or not sends.shape[0]:
        return out
    names = progs.mode_names or []
    index = np.array([modes.index(m) if m in modes else -2 for m in names] + [-1],
                     dtype=np.int64)
    got = index[progs.op_mode[sends]]
    bad = np.nonzero(got == -2)[0]
    if bad.size:
        op = int(sends[bad[0]])
        name = names[int(progs.op_mode[op])]
        known = ", ".join(modes) if modes else "none: the routing has no modes"
        raise ConfigError(f"{progs.describe(op)}: routing mode {name!r} is not a mode of the "
                          f"routing (its modes: {known})", source=progs.source,
                          path="workload")
    out[:sends.shape[0]] = got
    return out


def _table(n: int, **columns: np.ndarray | int) -> dict[str, np.ndarray]:
    """``columns`` as views of one int64 table of ``n`` rows whose width is a power of two, so
    that no row straddles two cache lines (8 columns: a row is one line).  The table has at
    least two rows (the spare ones -1): numba types a one-element view as contiguous, and
    every run must give the loop the same (strided) array types, or it would compile twice."""
    width = 1 << (len(columns) - 1).bit_length()
    rows = aligned_rows(max(n, 2), width, np.int64)
    rows[n:] = -1
    rows[:n, len(columns):] = -1
    # filled a block of rows at a time, so each cache line is written while it is cached:
    # column by column over the whole table, every column pass wrote every line again
    values = [np.broadcast_to(np.asarray(v), (n,)) for v in columns.values()]
    for a in range(0, n, _TABLE_BLOCK):
        block = rows[a:a + _TABLE_BLOCK]
        for j, v in enumerate(values):
            block[:, j] = v[a:a + _TABLE_BLOCK]
    return {name: rows[:, j] for j, name in enumerate(columns)}


#: rows of a table filled at once by _table (16,384 rows of 128 bytes: 2 MiB)
_TABLE_BLOCK = 1 << 14


def _nonempty(prog: Prog) -> Prog:
    """Give empty arrays one (unused) element: numba types an empty array like any other, but
    a zero-length allocation is easy to mistake for a missing field when debugging.  The
    element is -1 (no time, no index), so that a count of, say, started messages
    (``msg_post >= 0``) does not count it."""
    return prog._replace(**{k: (np.full(1, -1, dtype=v.dtype) if isinstance(v, np.ndarray)
                                and v.shape[0] == 0 else v)
                            for k, v in prog._asdict().items()})


def row_pool(n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row_flow, free)`` of a fresh pool of packet rows for ``n_nodes`` nodes: every row
    free (``row_flow`` -1) and the free stack popping the lowest row first; the driver
    doubles the pool when it runs short."""
    cap = max(1024, 2 * n_nodes)
    return np.full(cap, -1, dtype=np.int64), np.arange(cap - 1, -1, -1, dtype=np.int64)


def open_pool(n_nodes: int) -> OpenPool:
    """The :class:`OpenPool` of an open-loop run: the rows :func:`no_programs` would have."""
    row_flow, free = row_pool(n_nodes)
    return OpenPool(kick=np.zeros(2, dtype=np.int64), row_flow=row_flow, free=free)


def no_programs(n_nodes: int) -> Prog:
    """The program state of an open-loop run: no operation, no flow; the pool of rows."""
    empty = RankPrograms(np.zeros(1, dtype=np.int64), *(np.zeros(0) for _ in range(8)))
    fig = ProgramFigures(1, 0, 1)
    return build_traffic(empty, n_nodes, fig, np.zeros(1, dtype=np.int64)).prog
