"""Rank programs on SimGrid, adapter side: the worker's inputs, and its records as the native
engine's program state (:class:`~federation.engine.state.Prog`), which the summary and the
messages table read unchanged.

The worker (:mod:`.ranks`) runs one actor per rank.  What crossed the network comes back as
*flows*: each message's data, and for a rendezvous message its request (sender to receiver)
and reply (back), ``control_bytes`` each.  Their routes are written into the platform before
the run (the node pairs of every send, both ways), so every flow follows our route tables.
The packets table gets the packets the native engine would send for each flow that arrived
(:func:`packet_rows`), every one created when its flow started and delivered when it finished.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from federation.engine.program_arrays import ProgramTraffic
from federation.engine.state import Prog
from federation.results.spool import Spool

#: what the worker records per operation / per message (-1: never happened), int64 ps
OP_RECORDS = ("op_start", "op_finish", "op_msg")
MSG_RECORDS = ("msg_recv", "msg_post", "msg_queued", "msg_start", "msg_finish", "rts_sent",
               "rts_arrived", "cts_sent", "cts_arrived")


@dataclass
class Flows:
    """What crossed the network as SimGrid communications, one row each: source and
    destination node, bytes, packets the native engine would count, start and finish (ps,
    -1 never), router-to-router hops (filled from the routes)."""

    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    packets: np.ndarray
    start_ps: np.ndarray
    finish_ps: np.ndarray

    def __len__(self) -> int:
        return int(self.src.shape[0])


def worker_inputs(t: ProgramTraffic, nic_bandwidth: float) -> tuple[dict[str, np.ndarray],
                                                                    dict[str, Any]]:
    """``programs.npz`` and ``program-figures.json`` of the worker: the programs' operation
    graph, channels and messages as the native engine numbers them (without the padding of
    empty arrays)."""
    pg, progs = t.prog, t.programs
    n_ops, M = progs.n_ops, t.msg_src.shape[0]
    sends = np.nonzero(progs.op_kind == 0)[0].astype(np.int64)
    op_chan = pg.op_chan[:n_ops].copy() if n_ops else np.zeros(0, np.int64)
    op_msg = pg.op_msg[:n_ops].copy() if n_ops else np.zeros(0, np.int64)
    op_chan[sends] = pg.msg_chan[:M]
    D = progs.n_deps
    arrays = {
        "rank_first": progs.rank_first.astype(np.int64),
        "rank_node": progs.nodes().astype(np.int64),
        "op_kind": progs.op_kind.astype(np.int64), "op_rank": progs.op_rank.astype(np.int64),
        "op_peer": progs.op_peer.astype(np.int64),
        "op_time_ps": pg.op_time[:n_ops].astype(np.int64),
        "op_wait": pg.op_wait[:n_ops].astype(np.int64), "op_chan": op_chan, "op_msg": op_msg,
        "succ_first": pg.succ_first[0::2].astype(np.int64),  # per operation, kinds together
        "succ_op": pg.succ_op[:D].astype(np.int64),
        "succ_kind": pg.succ_kind[:D].astype(np.int64),
        "msg_op": sends, "msg_size": pg.msg_size[:M].astype(np.int64),
        "msg_rdv": pg.msg_rdv[:M].astype(np.int64),
        "chan_first": pg.chan_first.astype(np.int64),
    }
    figures = {"o_send_ps": int(pg.o_send), "o_recv_ps": int(pg.o_recv),
               "control_bytes": int(pg.control_bytes), "nic_bandwidth": float(nic_bandwidth)}
    return arrays, figures


def pairs(t: ProgramTraffic) -> tuple[np.ndarray, np.ndarray]:
    """The node pairs the programs' flows may use: each send's, and back for a reply."""
    rdv = t.msg_rdv.astype(bool)
    return (np.concatenate([t.msg_src, t.msg_dst[rdv]]),
            np.concatenate([t.msg_dst, t.msg_src[rdv]]))


def flows(t: ProgramTraffic, rec: dict[str, np.ndarray]) -> Flows:
    """The data, request and reply flows the run made (rows of messages whose flow never
    started are kept, with start -1: the ports count only started ones)."""
    pg = t.prog
    M = t.msg_src.shape[0]
    size = pg.msg_size[:M].astype(np.int64)
    P = int(pg.packet_size)
    rdv = t.msg_rdv.astype(bool)
    ctl = np.full(int(rdv.sum()), int(pg.control_bytes), dtype=np.int64)
    one = np.ones(ctl.shape[0], dtype=np.int64)
    return Flows(
        src=np.concatenate([t.msg_src, t.msg_src[rdv], t.msg_dst[rdv]]),
        dst=np.concatenate([t.msg_dst, t.msg_dst[rdv], t.msg_src[rdv]]),
        size=np.concatenate([size, ctl, ctl]),
        packets=np.concatenate([(size + P - 1) // P, one, one]),
        start_ps=np.concatenate([rec["msg_queued"], rec["rts_sent"][rdv],
                                 rec["cts_sent"][rdv]]),
        finish_ps=np.concatenate([rec["msg_finish"], rec["rts_arrived"][rdv],
                                  rec["cts_arrived"][rdv]]))


def program_state(t: ProgramTraffic, rec: dict[str, np.ndarray], rank_finish: np.ndarray,
                  fl: Flows, hops: np.ndarray) -> Prog:
    """The native engine's final program state, filled from the worker's records: what
    :func:`federation.pipeline.summary.program_summary`, ``program_message_table`` and
    :func:`federation.engine.native.stuck_report` read (arrays keep the native lengths)."""
    pg = t.prog

    def filled(name: str, values: np.ndarray) -> np.ndarray:
        """``values`` at the native length; an empty array's padding element is -1 ("never
        happened"; the native state leaves 0 there, which counts a message no program sent)."""
        out = np.full_like(getattr(pg, name), -1)
        out[:values.shape[0]] = values
        return out

    n_ops = t.programs.n_ops
    left = np.bincount(t.programs.op_rank[rec["op_finish"] < 0], minlength=t.programs.n_ranks)
    return pg._replace(
        **{k: filled(k, rec[k]) for k in (*OP_RECORDS, "msg_recv", "msg_post", "msg_start",
                                          "msg_finish")},
        op_wait=filled("op_wait", np.zeros(n_ops, dtype=np.int64)),
        rank_left=left.astype(np.int64), rank_finish=rank_finish.astype(np.int64),
        msg_arrived=filled("msg_arrived", np.where(t.msg_rdv.astype(bool), rec["rts_arrived"],
                                                   rec["msg_finish"])),
        pstat=packet_sums(fl, hops))


def packet_sums(fl: Flows, hops: np.ndarray) -> np.ndarray:
    """``Prog.pstat`` as the native engine sums it over delivered program packets, with every
    packet of a flow created when the flow started and delivered when it finished (a flow
    model has no packets; ``hops``: each flow's route)."""
    from federation.engine.programs import (
        PSTAT_BYTES,
        PSTAT_HOPS,
        PSTAT_LATENCY,
        PSTAT_MAX,
        PSTAT_NETMAX,
        PSTAT_NETWORK,
        PSTAT_PACKETS,
    )

    done = (fl.finish_ps >= 0) & (fl.start_ps >= 0)
    lat = (fl.finish_ps - fl.start_ps)[done]
    n = fl.packets[done]
    st = np.zeros(8, dtype=np.int64)
    st[PSTAT_PACKETS] = int(n.sum())
    st[PSTAT_BYTES] = int(fl.size[done].sum())
    st[PSTAT_LATENCY] = st[PSTAT_NETWORK] = int((lat * n).sum())
    st[PSTAT_MAX] = st[PSTAT_NETMAX] = int(lat.max()) if lat.size else 0
    st[PSTAT_HOPS] = int((hops[done] * n).sum())
    return st


def native_flow_ids(t: ProgramTraffic) -> np.ndarray:
    """The native engine's number of each row of :func:`flows`: message ``m``'s data is flow
    ``3m``, its rendezvous request ``3m + 1`` and reply ``3m + 2`` (the packets table reads
    the message, the sending rank and ``control`` from it)."""
    M = t.msg_src.shape[0]
    rdv = np.nonzero(t.msg_rdv.astype(bool))[0].astype(np.int64)
    return np.concatenate([3 * np.arange(M, dtype=np.int64), 3 * rdv + 1, 3 * rdv + 2])


#: packets per block of records handed to the sink (the native loop's record buffer)
RECORD_BLOCK = 1 << 13


def packet_rows(t: ProgramTraffic, fl: Flows, hops: np.ndarray) -> Spool:
    """The rank programs' rows of the packets table, as the native engine's sink makes them
    (:class:`~federation.engine.packet_stats.PacketSink`, same columns and numbering).

    Every flow that arrived counts the packets native would send for it (data:
    ``ceil(size / packet_size)`` of ``packet_size`` bytes, the last one the rest; request and
    reply: one of ``control_bytes``), all created and injected when the flow started (SimGrid
    has no NIC queue) and delivered when it finished, with the route's hops, minimal, no
    intermediate: the same packets :func:`packet_sums` counts, so the table has as many rows
    as the summary's delivered packets.  Rows are in delivery order (``packet`` 0, 1, ...),
    ties by native flow number then packet within the flow.  Records go to the sink in
    blocks of whole flows of about :data:`RECORD_BLOCK` packets, so memory stays bounded."""
    from federation.engine.packet_stats import PacketSink

    fid = native_flow_ids(t)
    done = np.nonzero((fl.finish_ps >= 0) & (fl.start_ps >= 0))[0]
    order = done[np.lexsort((fid[done], fl.finish_ps[done]))]
    sink = PacketSink(None, keep_programs=True)
    ends = np.cumsum(fl.packets[order])
    i = 0
    while i < order.shape[0]:
        before = int(ends[i - 1]) if i else 0
        j = max(i + 1, int(np.searchsorted(ends, before + RECORD_BLOCK, side="right")))
        sink.add(_packet_records(t, fl, hops, fid, order[i:j]))
        i = j
    assert sink.program_rows is not None
    return sink.program_rows


def _packet_records(t: ProgramTraffic, fl: Flows, hops: np.ndarray, fid: np.ndarray,
                    sel: np.ndarray) -> np.ndarray:
    """Delivery records (``federation.engine.feed.REC_*``) of every packet of flows ``sel``."""
    from federation.engine import feed as F

    n = fl.packets[sel]
    rows = np.repeat(sel, n)
    k = np.arange(rows.shape[0], dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
    f = fid[rows]
    P = int(t.prog.packet_size)
    rec = np.zeros((rows.shape[0], F.REC_COLS), dtype=np.int64)
    for col, x in ((F.REC_ID, -1), (F.REC_MSG, f // 3), (F.REC_SRC, fl.src[rows]),
                   (F.REC_DST, fl.dst[rows]),
                   (F.REC_SIZE, np.where(f % 3 == 0, np.minimum(P, fl.size[rows] - k * P),
                                         fl.size[rows])),
                   (F.REC_CREATED, fl.start_ps[rows]), (F.REC_INJECT, fl.start_ps[rows]),
                   (F.REC_DELIVER, fl.finish_ps[rows]), (F.REC_HOPS, hops[rows]),
                   (F.REC_MINIMAL, 1), (F.REC_VIA, -1), (F.REC_FLOW, f),
                   (F.REC_CLASS, t.msg_cls[f // 3])):
        rec[:, col] = x
    return rec
