"""The one typed container the compiled loop, routings and arbiters share: :class:`Sim`.

All state of a run is flat NumPy arrays held by the driver (``native.py``), so a loop slice
can stop and resume anywhere.  They travel into compiled code as one named tuple instead of
fifty positional arguments; numba types it field by field, so ``sim.credits[i]`` costs what a
bare array access costs.  Routing and arbiter plugins should read it through the accessors of
:mod:`federation.engine.api`, which keep working when fields are added or regrouped.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Sim(NamedTuple):
    # ---- figures of the machine (read-only during a run)
    n_vcs: np.int64  #: VCs per port
    router_delay: np.int64  #: ps from arrival to routing
    cut_through: bool  #: route on the head's arrival (virtual cut-through)
    n_router_ports: np.int64  #: ports below this id belong to routers, the rest to NICs
    max_hops: np.int64  #: more router-to-router hops than this is a routing loop
    port_peer: np.ndarray  #: int64[P] the port at the other end of each port's cable
    port_router: np.ndarray  #: int64[P] owning router, -1 for a NIC port
    port_ser: np.ndarray  #: float64[P] ps per byte out of the port
    port_lat: np.ndarray  #: int64[P] cable latency, ps
    port_buf: np.ndarray  #: int64[P] input buffer per VC behind the port, bytes
    router_port_start: np.ndarray  #: int64[R+1] router r owns ports [start[r], start[r+1])
    node_router: np.ndarray  #: int64[N]
    node_port: np.ndarray  #: int64[N] the router port that leads to the node
    nic_port: np.ndarray  #: int64[N] the node's NIC port
    # ---- traffic
    pkt_time: np.ndarray  #: int64[K] creation time
    nic_first: np.ndarray  #: int64[N+1] node n's packets are nic_pkts[nic_first[n]:nic_first[n+1]]
    nic_pkts: np.ndarray  #: int32[K] packets in injection order per node
    # ---- dynamic state
    sc: np.ndarray  #: int64 scalars (events.S_*)
    hk: np.ndarray  #: event heap keys
    ha: np.ndarray  #: event payload (a, kind)
    hb: np.ndarray  #: event payload (b, c)
    ps: np.ndarray  #: int32[K, 16] packet state rows (api.P_* columns)
    q_head: np.ndarray  #: int32[P*V] head packet of each input VC queue, -1 empty
    q_tail: np.ndarray  #: int32[P*V]
    occ: np.ndarray  #: int64[P] bytes held in each input port's buffers
    credits: np.ndarray  #: int64[P*V] free bytes downstream of each output VC
    busy_until: np.ndarray  #: int64[P] when the port's current transmission ends
    wake: np.ndarray  #: int64[P] time of the port's pending FREE event, -1 none
    req_head: np.ndarray  #: int64[P] first input VC (p*V+v) requesting this output, -1 none
    req_tail: np.ndarray  #: int64[P]
    req_next: np.ndarray  #: int64[P*V] next request in the same output's list
    req_count: np.ndarray  #: int64[P] requests waiting for each output
    stall_start: np.ndarray  #: int64[P] start of the current credit stall, -1 none
    nic_ptr: np.ndarray  #: int64[N] next packet of each NIC (index into nic_pkts)
    nic_wake: np.ndarray  #: int64[N] time of the NIC's pending wake-up, -1 none
    # ---- results
    pkt_inject: np.ndarray  #: int64[K]
    pkt_deliver: np.ndarray  #: int64[K]
    pkt_tail: np.ndarray  #: int64[K] (cut-through only; length 1 otherwise)
    port_bytes: np.ndarray  #: int64[P]
    port_pkts: np.ndarray  #: int64[P]
    port_busy: np.ndarray  #: int64[P]
    port_stall: np.ndarray  #: int64[P]
    port_peak: np.ndarray  #: int64[P]
    n_classes: np.int64  #: traffic classes
    port_class_bytes: np.ndarray  #: int64[P*C] bytes sent per port and class
