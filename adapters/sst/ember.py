"""Closed-loop workloads with an ember twin as SST ember/firefly endpoints on the merlin network.

Our ``pingpong``, ``allreduce`` and ``halo3d`` workloads restate ember's ``PingPong``,
``Allreduce`` and ``Halo3D`` motifs (sst-elements ``src/sst/elements/ember/mpi/motifs``), so the
same experiment can run on ember: every node gets a ``firefly.nic`` (with a
``merlin.linkcontrol`` toward its router) and an ``ember.EmberEngine`` whose OS is firefly's
``firefly.hades`` with the MPI API ``firefly.hadesMP``.  Ranks sit on the nodes our workload
places them on (``indexed`` allocation: rank ``k`` on node ``rank_node[k]``, written as the
node's ``netMapId``); the nodes no rank uses run ember's ``NullMotif``, as ember's own
``loadInfo.py`` fills idle nodes.

Firefly models host-side costs our engine does not have (NIC-to-host bus, match delays,
memcpy per byte, function enter/return latencies...).  Every such delay is written out as 0,
and the two figures our NIC does model are mirrored or refused: ``nic.eager_threshold``
becomes ctrlMsg's ``shortMsgLength`` (both send a message of exactly that size eagerly), and
a non-zero ``nic.send_overhead`` / ``recv_overhead`` is refused, because firefly's setup
latencies (``txSetupMod``, ``rxSetupMod``) are charged at points of its protocol that we could
not confirm to match LogGP's ``o``.  What cannot be expressed exactly is refused with a
:class:`~.topologies.Refusal` naming the field; ``docs/sst.md`` ("Rank-program workloads on
ember") gives the sources and the full parameter table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from federation.models.units import seconds_to_ps
from federation.pipeline.points import ResolvedPoint

from .qos import qos_router_params
from .topologies import Refusal

#: our closed-loop workload -> ember motif (``ember.<name>Motif``)
EMBER_TWINS = {"pingpong": "PingPong", "allreduce": "Allreduce", "halo3d": "Halo3D"}
#: ember's MPI_Init motif, run first by every rank (see :func:`_after_init`)
INIT_MOTIF = "ember.InitMotif"
#: ember's motif for nodes without a rank (``ember/test/loadInfo.py``)
NULL_MOTIF = "ember.NullMotif"
#: job id of the ranks' job and of the idle nodes (loadInfo gives its Null part -1)
JOB_ID, IDLE_JOB_ID = 0, -1
#: ember reads these motif arguments as ``uint32_t`` (``params.find<uint32_t>`` / casts)
UINT32 = 2**32
#: ``EmberEngine.motifLog`` of the ranks: each writes its motifs' start and end times to
#: ``motifs.log`` (read back by :mod:`.ember_output`)
MOTIF_LOG = "motifs"
#: latency of the links inside a node (hades <-> NIC, ctrlMsg <-> loopBack); ember's scripts
#: use 1 ns, this is the smallest SST link latency, so each crossing costs 1 ps
HOST_LINK_LATENCY = "1ps"


@dataclass
class EmberJob:
    """The motif parameters of the ranks' ember engines and where each rank sits."""

    motifs: dict[str, Any]
    rank_node: list[int]
    notes: list[str] = field(default_factory=list)


def is_closed_loop(point: ResolvedPoint) -> bool:
    return bool(getattr(point.workload, "closed_loop", False))


def ember_job(point: ResolvedPoint, n_nodes: int, nodes: Any = None) -> EmberJob:
    """The ember motif(s) of the point's workload, or a Refusal naming the field; with
    ``nodes`` (a job's machine nodes in order) its ranks on those nodes (ember's ``indexed``
    allocation takes any node list)."""
    if nodes is not None:
        job = ember_job(point, len(nodes))
        return EmberJob(job.motifs, [int(nodes[k]) for k in job.rank_node], job.notes)
    qos_router_params(point, closed_loop=True)
    wl = point.workload
    if wl.name not in EMBER_TWINS:
        raise Refusal("workload.kind", f"workload {wl.name!r} has no ember motif twin (ember "
                      "motifs are generators written in C++; a program read from a file, or "
                      "any other rank program, cannot be replayed by them); supported: "
                      + ", ".join(sorted(EMBER_TWINS)), document="experiment")
    _check_nic(point)
    job = {"pingpong": _pingpong, "allreduce": _allreduce, "halo3d": _halo3d}[wl.name](
        wl, n_nodes)
    return _after_init(job)


def _after_init(job: EmberJob) -> EmberJob:
    """The job's motifs behind ember's ``Init`` motif (motif 0).

    hermes ``MPI_Init`` (firefly ``InitFuncSM`` -> ``ProcessQueuesState::enterInit``) sets up
    the heap that eager receive buffers are allocated from; a rank that sends or receives
    without it has none, so every ember script (``emberLoad.py``, ``EmberMPIJob``) runs
    ``Init`` first.  With the host delays at 0 it ends at time 0 (checked in the motif log of
    real runs); ``Fini`` (a barrier) is not added, as our programs end without one."""
    motifs: dict[str, Any] = {"motif0.name": INIT_MOTIF}
    for key, value in job.motifs.items():
        if key == "motif_count":
            motifs[key] = value + 1
        else:
            head, _, rest = key.partition(".")
            motifs[f"motif{int(head.removeprefix('motif')) + 1}.{rest}"] = value
    return EmberJob(motifs, job.rank_node, job.notes)


def _check_nic(point: ResolvedPoint) -> None:
    nic = point.machine.machine.nic
    for name in ("send_overhead", "recv_overhead"):
        value = getattr(nic, name)
        if seconds_to_ps(value) != 0:
            raise Refusal(f"nic.{name}", f"{name} {value:g} s: firefly charges its host "
                          "latencies (ctrlMsg txSetupMod/rxSetupMod, hades function "
                          "enter/return) at points of its protocol not confirmed to match "
                          "LogGP's o, so the ember configuration zeroes them all; set "
                          f"nic.{name} to 0 to compare with ember")


def _uint32(value: int, field_: str, what: str) -> int:
    if not 0 <= value < UINT32:
        raise Refusal(field_, f"{what} {value} does not fit ember's 32-bit argument "
                      f"(at most {UINT32 - 1})", document="experiment")
    return int(value)


def _whole_ns(seconds: float, field_: str, limit: int | None = None) -> int:
    """A time as ember's integer nanoseconds, refused unless exact (and below ``limit``)."""
    ps = seconds_to_ps(seconds)
    if ps % 1000:
        raise Refusal(field_, f"{ps} ps is not a whole number of nanoseconds; ember reads "
                      "this argument as integer ns", document="experiment")
    ns = ps // 1000
    if limit is not None and ns >= limit:
        raise Refusal(field_, f"{ns} ns does not fit ember's 32-bit argument (at most "
                      f"{limit - 1} ns)", document="experiment")
    return ns


def _motif(k: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {f"motif{k}.name": f"ember.{name}Motif"}
    out.update({f"motif{k}.arg.{a}": v for a, v in args.items()})
    return out


def _pingpong(wl: Any, n_nodes: int) -> EmberJob:
    """One ``PingPong`` motif per size, run in turn (ember starts a rank's next motif when
    its previous one ends, as our rank starts the next size after its last receive)."""
    p = wl.params
    for i, node in enumerate(p.nodes):
        if not 0 <= node < n_nodes:
            raise Refusal(f"workload.nodes[{i}]", f"node {node} does not exist (the machine "
                          f"has {n_nodes} nodes)", document="experiment")
    if p.nodes[0] == p.nodes[1]:
        raise Refusal("workload.nodes", "both ranks on one node: ember would use firefly's "
                      "loopback, not the network", document="experiment")
    iters = _uint32(p.iterations, "workload.iterations", "iterations")
    motifs: dict[str, Any] = {}
    for k, s in enumerate(p.sizes):
        size = _uint32(int(s), f"workload.sizes[{k}]", "message size")
        motifs.update(_motif(k, EMBER_TWINS["pingpong"], {
            "messageSize": size, "iterations": iters, "rank2": 1,
            "blockingSend": 1, "blockingRecv": 1, "waitall": 0}))
    motifs["motif_count"] = len(p.sizes)
    return EmberJob(motifs, [int(n) for n in p.nodes])


def _allreduce(wl: Any, n_nodes: int) -> EmberJob:
    """ember's ``Allreduce``: ``compute`` then ``MPI_Allreduce`` of ``count`` doubles.

    firefly's allreduce (``funcSM/collectiveTree.cc``, ``YYY(2, ...)``) is a binary tree:
    irecv from both children, wait, send to the parent, receive from it, isend to the
    children.  Ours is recursive doubling, so only one rank (no message at all) is the same
    program on both sides."""
    p = wl.params
    n = p.ranks if p.ranks is not None else n_nodes
    if n > n_nodes:
        raise Refusal("workload.ranks", f"{n} ranks need {n} nodes; the machine has "
                      f"{n_nodes}", document="experiment")
    if n > 1:
        raise Refusal("workload.kind", f"allreduce over {n} ranks: ember's Allreduce motif "
                      "calls firefly's MPI_Allreduce, a binary tree (reduce up: irecv from "
                      "children 2r+1 and 2r+2, send to the parent; then broadcast down), not "
                      "our recursive doubling (log2(p) pairwise exchanges); the messages "
                      "differ in number, order and pairs.  Only ranks: 1 maps",
                      document="experiment")
    size = int(p.size)
    if size % 8:
        raise Refusal("workload.size", f"size {size} B is not a whole number of doubles: "
                      "ember's arg.count counts 8-byte doubles", document="experiment")
    args = {"count": _uint32(size // 8, "workload.size", "count (doubles)"),
            "iterations": _uint32(p.iterations, "workload.iterations", "iterations"),
            "compute": _whole_ns(p.compute, "workload.compute", UINT32)}
    motifs = _motif(0, EMBER_TWINS["allreduce"], args)
    motifs["motif_count"] = 1
    return EmberJob(motifs, list(range(n)))


def _halo3d(wl: Any, n_nodes: int) -> EmberJob:
    """ember's ``Halo3D`` with the process grid given explicitly (ours, or ember's own choice
    computed the same way) and ``computetime`` in whole ns."""
    from federation.errors import ConfigError

    p = wl.params
    try:
        grid = wl.grid(n_nodes)
    except ConfigError as e:
        raise Refusal(e.path or "workload", str(e), document="experiment") from None
    n = grid[0] * grid[1] * grid[2]
    if p.doreduce and n > 1:
        raise Refusal("workload.doreduce", "doreduce 1: ember ends each iteration with "
                      "firefly's MPI_Allreduce, a binary tree (reduce then broadcast), not "
                      "our recursive doubling; set doreduce: 0 to compare with ember",
                      document="experiment")
    comp_field = "computetime" if p.computetime is not None else "peflops"
    args: dict[str, Any] = {
        "nx": p.nx, "ny": p.ny, "nz": p.nz, "pex": grid[0], "pey": grid[1], "pez": grid[2],
        "fields_per_cell": p.fields_per_cell, "datatype_width": p.datatype_width,
        "iterations": p.iterations, "doreduce": int(p.doreduce),
        "flopspercell": p.flopspercell,
        "computetime": _whole_ns(wl.compute_ps() / 1e12, f"workload.{comp_field}"),
        "copytime": _whole_ns(p.copytime, "workload.copytime", UINT32),
    }
    for name in ("nx", "ny", "nz", "fields_per_cell", "datatype_width", "iterations"):
        _uint32(args[name], f"workload.{name}", name)
    if float(p.peflops).is_integer() and p.peflops < 2**64:
        # ember reads it as uint64_t even where computetime (always written) decides: a value
        # past 2**64 would abort sst, a fraction be cut; ember's default stands in for those
        args["peflops"] = int(p.peflops)
    if p.nx * p.ny * p.nz >= UINT32:
        raise Refusal("workload.nx", "nx x ny x nz overflows ember's 32-bit cell count",
                      document="experiment")
    cell = p.fields_per_cell * p.datatype_width
    for axis, (a, b) in (("x", ("ny", "nz")), ("y", ("nx", "nz")), ("z", ("nx", "ny"))):
        face = cell * getattr(p, a) * getattr(p, b)
        if face >= UINT32:  # ember's face size and firefly's message size are uint32_t
            raise Refusal(f"workload.{b}", f"a {axis} face of fields_per_cell x "
                          f"datatype_width x {a} x {b} = {face} B does not fit ember's "
                          f"32-bit message size (at most {UINT32 - 1} B)", document="experiment")
    motifs = _motif(0, EMBER_TWINS["halo3d"], args)
    motifs["motif_count"] = 1
    return EmberJob(motifs, list(range(n)))


# --------------------------------------------------------------------------- host side


def nic_params(packet: int, nic_bw: str, buffer: str) -> dict[str, Any]:
    """``firefly.nic`` parameters: the packet size, and every host-side delay at 0."""
    return {
        "packetSize": f"{packet}B", "link_bw": nic_bw, "input_buf_size": buffer,
        "output_buf_size": buffer, "nic2host_lat": "0ns", "rxMatchDelay_ns": 0,
        "txDelay_ns": 0, "hostReadDelay_ns": 0, "shmemRxDelay_ns": 0, "packetOverhead": 0,
        "num_vNics": 1, "numVNs": 1,
    }


def _zero_mod(name: str, mult: bool = False) -> dict[str, Any]:
    out = {name: "firefly.LatencyMod", f"{name}Params.range.0": "0-:0ns"}
    if mult:
        out[f"{name}Params.op"] = "Mult"
    return out


def ctrl_msg_params(eager_threshold: int) -> dict[str, Any]:
    """``firefly.CtrlMsgProto`` / ``firefly.ctrlMsg`` parameters: the eager limit mirrored,
    every latency module and delay at 0."""
    out: dict[str, Any] = {
        "shortMsgLength": eager_threshold, "matchDelay_ns": 0, "sendAckDelay_ns": 0,
        "regRegionBaseDelay_ns": 0, "regRegionPerPageDelay_ns": 0,
        "sendStateDelay_ps": 0, "recvStateDelay_ps": 0, "waitallStateDelay_ps": 0,
        "waitanyStateDelay_ps": 0,
    }
    for mod in ("txSetupMod", "rxSetupMod", "rxPostMod", "txFiniMod", "rxFiniMod"):
        out.update(_zero_mod(mod))
    for mod in ("txMemcpyMod", "rxMemcpyMod"):
        out.update(_zero_mod(mod, mult=True))
    return out


def hermes_params() -> dict[str, Any]:
    """``firefly.hades`` parameters shared by every node (function latencies at 0)."""
    return {"nicModule": "firefly.VirtNic", "functionSM.defaultEnterLatency": 0,
            "functionSM.defaultReturnLatency": 0}


def virt_nic_params() -> dict[str, Any]:
    return {"latPerSend_ns": 0}


def engine_params() -> dict[str, Any]:
    """``ember.EmberEngine`` parameters of every node: hermes MPI as ``EmberMPIJob`` sets it."""
    return {"api.0.module": "firefly.hadesMP", "verbose": 0}


def idle_motifs() -> dict[str, Any]:
    return {"motif0.name": NULL_MOTIF, "motif_count": 1}


def placement(job: EmberJob, n_nodes: int) -> list[tuple[int, int]]:
    """Per node ``(jobId, netMapId)``: the ranks' job with the rank on its node, or the idle
    job with -1 (ember's ``calcNetMapId`` for a node outside the job's nid list)."""
    rank_of = {node: r for r, node in enumerate(job.rank_node)}
    return [(JOB_ID, rank_of[n]) if n in rank_of else (IDLE_JOB_ID, -1)
            for n in range(n_nodes)]


def host_notes(eager: int) -> list[str]:
    return [
        f"host side (firefly): every delay zeroed (nic2host_lat, rxMatchDelay_ns, txDelay_ns, "
        "hostReadDelay_ns, matchDelay_ns, tx/rx setup, post, fini and memcpy latency "
        "modules, function enter/return, latPerSend_ns); shortMsgLength mirrors "
        f"nic.eager_threshold ({eager} B, eager when length <= it on both); send/recv "
        "overhead 0 on both (non-zero is refused)",
        f"links inside a node (hades-NIC, ctrlMsg-loopBack) have SST's minimum latency "
        f"{HOST_LINK_LATENCY} per crossing; ours have none",
        "rendezvous: firefly's control messages have its own header sizes, not "
        "nic.control_bytes; its DMA model (dmaBW_GBs) is left at its default",
    ]


#: the endpoint part of an ember configuration (the routers and cables come before it)
BUILD_ENDPOINTS = '''
for node, rid, port in HOSTS:
    job, rank = PLACEMENT[node]
    nic = sst.Component("nic%d" % node, "firefly.nic")
    nic.addParams(NIC_PARAMS)
    nic.addParams({"nid": node})
    rtr_link = nic.setSubComponent("rtrLink", "merlin.linkcontrol")
    rtr_link.addParams(LINKCONTROL_PARAMS)
    link = sst.Link("host_%d" % node)
    link.connect((rtr_link, "rtr_port", LATENCY["terminal"]),
                 (routers[rid], "port%d" % port, LATENCY["terminal"]))
    loop = sst.Component("loopBack%d" % node, "firefly.loopBack")
    loop.addParams({"numCores": 1, "nicsPerNode": 1})
    ep = sst.Component("nic%dcore0_EmberEP" % node, "ember.EmberEngine")
    ep.addParams(EMBER_PARAMS)
    ep.addParams({"jobId": job})
    ep.addParams(MOTIFS if rank >= 0 else IDLE_MOTIFS)
    if rank >= 0:
        ep.addParams({"motifLog": MOTIF_LOG})
    os = ep.setSubComponent("OS", "firefly.hades")
    os.addParams(HERMES_PARAMS)
    os.addParams({"netMapName": "Ember%d" % job, "netId": node, "netMapId": rank,
                  "netMapSize": JOB_SIZE if rank >= 0 else 0, "coreId": 0})
    virt_nic = os.setSubComponent("virtNic", "firefly.VirtNic")
    virt_nic.addParams(VIRTNIC_PARAMS)
    proto = os.setSubComponent("proto", "firefly.CtrlMsgProto")
    proto.addParams(CTRLMSG_PARAMS)
    process = proto.setSubComponent("process", "firefly.ctrlMsg")
    process.addParams(CTRLMSG_PARAMS)
    nic_link = sst.Link("nic%dcore0_Link" % node)
    nic_link.connect((virt_nic, "nic", HOST_LATENCY), (nic, "core0", HOST_LATENCY))
    loop_link = sst.Link("loop%dnic0core0_Link" % node)
    loop_link.connect((process, "loop", HOST_LATENCY), (loop, "nic0core0", HOST_LATENCY))

sst.setStatisticLoadLevel(1)
sst.setStatisticOutput("sst.statOutputCSV", {"filepath": STATS_FILE, "separator": ", "})
# by type: enableStatistics() on each linkcontrol object kept only node 0's (sst 16.0)
for stat in NIC_STATS:
    sst.enableStatisticForComponentType("merlin.linkcontrol", stat, STAT_PARAMS)
for stat in ROUTER_STATS:
    sst.enableStatisticForComponentType("merlin.hr_router", stat, STAT_PARAMS)
'''


def build(point: ResolvedPoint, sst_net: Any, router: dict[str, Any],
          figures: dict[str, dict[str, float]], nic_bw: float, notes: list[str],
          nodes: Any = None) -> Any:
    """The :class:`~.config.SstConfig` of a closed-loop point: merlin routers and cables as
    for open-loop points, ember/firefly endpoints instead of ``merlin.offered_load``
    (``nodes``: the job's machine nodes, in order)."""
    from . import script as c  # noqa: I001

    machine = point.machine.machine
    n_nodes = len(sst_net.hosts)
    job = ember_job(point, n_nodes, nodes)
    eager = int(machine.nic.eager_threshold)
    buffer = c.size(figures["terminal"]["buffer"])
    nic = nic_params(int(machine.packet_size), c.rate(nic_bw), buffer)
    linkcontrol = {"link_bw": c.rate(nic_bw), "input_buf_size": buffer,
                   "output_buf_size": buffer}
    latency = {k: c.duration(f["latency"]) for k, f in figures.items()}
    notes = list(notes) + host_notes(eager) + job.notes
    stat = {"type": "sst.AccumulatorStatistic", "rate": "0ns"}
    data = {
        "ROUTER_PARAMS": router, "TOPOLOGY": sst_net.topology,
        "TOPOLOGY_PARAMS": sst_net.topo_params, "ROUTER_EXTRA": sst_net.router_params,
        "NUM_PORTS": sst_net.num_ports, "LATENCY": latency, "CABLES": sst_net.cables,
        "HOSTS": sst_net.hosts, "PLACEMENT": placement(job, n_nodes),
        "JOB_SIZE": len(job.rank_node), "MOTIFS": job.motifs, "IDLE_MOTIFS": idle_motifs(),
        "EMBER_PARAMS": engine_params(), "HERMES_PARAMS": hermes_params(),
        "VIRTNIC_PARAMS": virt_nic_params(), "CTRLMSG_PARAMS": ctrl_msg_params(eager),
        "NIC_PARAMS": nic, "LINKCONTROL_PARAMS": linkcontrol,
        "HOST_LATENCY": HOST_LINK_LATENCY, "STATS_FILE": c.STATS_FILE,
        "MOTIF_LOG": MOTIF_LOG, "STAT_PARAMS": stat,
        "ROUTER_STATS": list(c.ROUTER_STATS), "NIC_STATS": list(c.NIC_STATS),
    }
    motif = ", ".join(sorted({v for k, v in job.motifs.items() if k.endswith(".name")}))
    head = c.header(point, sst_net, notes, f"{motif}, {len(job.rank_node)} ranks "
                    "(indexed node allocation)")
    body = [f"{k} = {c.pformat(v)}" for k, v in data.items()]
    routers = c.BUILD_NETWORK.strip()
    text = "\n".join(head + body + ["", routers, "", BUILD_ENDPOINTS.strip(), ""])
    return c.SstConfig(text, sst_net, n_nodes, (0, 0), nic_bw,
                       {k: float(f["bandwidth"]) for k, f in figures.items()}, notes,
                       motifs=int(job.motifs["motif_count"]))
