"""Open-loop jobs on merlin's endpoints: each job's nodes run ``merlin.offered_load`` confined
to the job, on its traffic class's virtual network.

merlin gives an endpoint two ways to belong to a job (sst-elements ``merlin/interfaces/
linkControl.cc``):

* **a node id map** (``job_id``, ``job_size``, ``logical_nid``, ``use_nid_remap``): the
  linkcontrol reports its logical id (its rank in the job) as the endpoint id and translates
  each destination from logical to physical through a map the job's endpoints fill at
  initialisation.  ``merlin.offered_load`` draws its destinations from
  ``merlin.targetgen.uniform`` over ``0 .. num_peers - 1`` without itself, so with
  ``num_peers`` = the job's size it sends uniformly within its job, as our ``uniform``
  pattern does on a job's nodes, whatever the placement;
* **a VN remap** (``vn_remap: [v]``): the endpoint's one VN is carried on the network's VN
  ``v`` (the receiving endpoint still sees VN 0).  A job's packets all have its class
  (``jobs[i].class``), so its endpoints send on the VN of that class.

Nodes of no job get no endpoint: merlin leaves an unconnected router port idle.  The one
whole-machine job of the old form (``workload`` on every node, class 0) keeps the plain
configuration, without maps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from federation.network import Network
from federation.pipeline.points import Placed, ResolvedJob, ResolvedPoint, point_jobs
from federation.plugin.components import QosPolicy

from .topologies import Refusal


@dataclass(frozen=True)
class EndpointJob:
    """One open-loop job as merlin endpoints: ``nodes[i]`` is the machine node of its logical
    id ``i``; ``vn`` its class's virtual network."""

    name: str
    index: int
    nodes: np.ndarray
    load: float
    vn: int


def job_class(point: ResolvedPoint, job: ResolvedJob) -> int:
    """The traffic class of every packet of ``job`` (its ``class``, else the policy's default
    class 0), or a Refusal: classes by operation kind have no carrier on merlin's endpoints."""
    qos = point.machine.qos
    names = list(qos.class_names())
    if len(names) <= 1:
        return 0
    cls, by, where = point.experiment.class_fields(job.field)
    if by is not None:
        raise Refusal(where if where == "class_by" else f"{where}.class_by", "merlin's "
                      "endpoints send a whole endpoint on one VN (linkcontrol vn_remap); "
                      "classes by operation kind have no carrier", document="experiment")
    if cls is not None:
        return names.index(cls)
    if type(qos).traffic_class is not QosPolicy.traffic_class:
        raise Refusal(job.at("class"), f"QoS policy {qos.name!r} classes packets its own way; "
                      f"give job {job.name!r} a class so that its endpoints have one VN",
                      document="experiment")
    return 0


def endpoint_jobs(point: ResolvedPoint, net: Network, placed: Placed | None,
                  ) -> list[EndpointJob] | None:
    """The point's open-loop jobs as endpoint groups, or ``None`` when the point is the plain
    case (one job on every node in node order, class 0).  Refuses (naming the field) a job's
    start, slowdown runs, and two jobs on one node (a host port has one endpoint)."""
    jobs = point_jobs(point)
    exp = point.experiment
    if exp.jobs is None and len(jobs) == 1 and job_class(point, jobs[0]) == 0:
        return None
    if exp.slowdown:
        raise Refusal("slowdown", "engine sst does not run jobs alone for slowdown",
                      document="experiment")
    out = []
    owner = np.full(net.n_nodes, -1, dtype=np.int64)
    for job in jobs:
        if job.closed_loop:
            raise Refusal(job.field, f"engine sst runs rank programs (ember) as one job; job "
                          f"{job.name!r} is closed-loop beside other jobs", document="experiment")
        if job.start_ps:
            raise Refusal(job.at("start"), "engine sst starts its endpoints at 0; a job's "
                          "start is not mapped", document="experiment")
        nodes = _nodes(job, net, placed)
        taken = owner[nodes]
        if (taken >= 0).any():
            other = jobs[int(taken[taken >= 0][0])]
            raise Refusal(job.at("placement"), f"jobs {other.name!r} and {job.name!r} share "
                          f"node {int(nodes[taken >= 0][0])}: a merlin host port has one "
                          "endpoint", document="experiment")
        owner[nodes] = job.index
        out.append(EndpointJob(job.name, job.index, nodes, float(job.workload.params.load),
                               job_class(point, job)))
    return out


def _nodes(job: ResolvedJob, net: Network, placed: Placed | None) -> np.ndarray:
    if placed is None:
        if not job.field.startswith("jobs["):
            return np.arange(net.n_nodes, dtype=np.int64)
        raise ValueError("several jobs: build_config needs the point's placed jobs")
    return np.asarray(placed.of(job).nodes, dtype=np.int64)


def endpoint_tables(jobs: list[EndpointJob], endpoint: dict[str, Any],
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[int, list[int]]]:
    """Per job, the endpoint parameters (``endpoint`` with the job's load and size) and the
    linkcontrol's job parameters (id map, VN remap); per node, ``[job, logical id]``."""
    eps, nics, where = [], [], {}
    for j in jobs:
        eps.append({**endpoint, "offered_load": j.load, "num_peers": int(j.nodes.size)})
        nics.append({"job_id": j.index, "job_size": int(j.nodes.size),
                     "use_nid_remap": "true", "vn_remap": [j.vn]})
        for i, node in enumerate(j.nodes.tolist()):
            where[int(node)] = [len(eps) - 1, i]
    return eps, nics, where


#: the host loop of a configuration with job endpoints (in place of script.BUILD_HOSTS)
JOB_HOSTS = '''
for node, rid, port in HOSTS:
    if node not in JOB_OF:
        continue  # a node of no job: its router port stays unconnected
    job, logical = JOB_OF[node]
    ep = sst.Component("nic%d" % node, ENDPOINT)
    ep.addParams(JOB_ENDPOINT_PARAMS[job])
    nic = ep.setSubComponent("networkIF", "merlin.linkcontrol")
    nic.addParams(NIC_PARAMS)
    nic.addParams(JOB_NIC_PARAMS[job])
    nic.addParams({"logical_nid": logical})
    link = sst.Link("host_%d" % node)
    link.connect((nic, "rtr_port", LATENCY["terminal"]),
                 (routers[rid], "port%d" % port, LATENCY["terminal"]))
'''
