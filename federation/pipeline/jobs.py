"""Stage *jobs*: every job of a built point on its nodes, in rank order.

Runs after *build* (placements read the built machine) and before *traffic*.  In two steps,
because a two-opt rank order needs the job's own messages, which its rank programs give:

1. :func:`place_jobs`: each job's placement, in the order of ``jobs`` with the ``list``
   placements first and every ``rest`` last, each drawing from the job's own stream (the
   experiment's seed and the job's position); overlapping jobs are refused, naming both,
   unless one of them is ``shared``.
   Then each job's static rank order (``ascending``, ``placement``, ``cco``; a ``two_opt``
   job starts from its ``initial`` order).
2. :func:`order_ranks`: the ``two_opt`` jobs' search over their programs' messages on the
   routing's minimal paths (:mod:`federation.network.mapping`).

A job's node ``i`` is ``nodes[i]`` of its :class:`~federation.pipeline.points.PlacedJob`; its
workload sees the machine through :func:`~federation.pipeline.points.job_view` (every router
and cable, its nodes only), so a workload written for a whole machine confines itself to the
job unchanged.

May import: :mod:`.points`, :mod:`.bounds` and the layers below the pipeline.  Never another
stage.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from federation.errors import ConfigError, TopologyError
from federation.network import Network
from federation.network.mapping import (
    PairPaths,
    edges_of,
    router_paths,
    sharing,
    two_opt,
    walk,
)
from federation.pipeline.points import (
    ORDER_STREAM,
    PLACEMENT_STREAM,
    Built,
    Placed,
    PlacedJob,
    ResolvedJob,
    ResolvedPoint,
    TwoOptFigures,
    job_stream,
    point_jobs,
)
from federation.plugin.jobs import PlacementContext
from federation.programs.model import SEND, RankPrograms

#: two-opt holds the paths between every pair of a job's routers: at most this many pairs
MAX_TWO_OPT_PAIRS = 1 << 22
#: the thesis' iterations (Tables 3.4-3.6)
DEFAULT_ITERATIONS = 200_000


def relocated(exc: ConfigError, point: ResolvedPoint, path: str) -> ConfigError:
    """``exc`` (a path relative to a job's placement) in the experiment file."""
    where = f"{path}.{exc.path}" if exc.path else path
    return ConfigError(exc.message, source=point.source, path=where)


def check_classes(point: ResolvedPoint) -> None:
    """Every traffic class a job names (``jobs[i].class``, ``class_by``; ``classes`` and
    ``class_by`` of the one-workload form) is one of ``machine.qos``'s classes, and
    ``class_by`` is given to closed-loop jobs only.  A machine with one class (no QoS) runs
    every packet in it whatever the jobs say, so that one file sweeps ``machine.qos`` with and
    without; its names are checked on the points that have classes."""
    exp = point.experiment
    qos = point.machine.qos
    names = list(qos.class_names())
    jobs = point_jobs(point)
    if exp.classes is not None and exp.classes.background is not None \
            and not any(j.field == "background" for j in jobs):
        raise ConfigError("classes.background names the class of a background, but the "
                          "experiment has none", source=point.source, path="classes.background")
    if len(names) <= 1:
        return
    for job in jobs:
        cls, by, where = exp.class_fields(job.field)
        given = [(f"{where}" if where != job.field else f"{where}.class", cls)] \
            if cls is not None else []
        if by is not None:
            base = where if where == "class_by" else f"{where}.class_by"
            given += [(f"{base}.collective", by.collective),
                      (f"{base}.point_to_point", by.point_to_point)]
            if not job.closed_loop:
                raise ConfigError(f"class_by classes a closed-loop job's sends by the operation "
                                  f"that made them; {job.name!r} is open-loop (give it "
                                  "'class')", source=point.source, path=base)
        for path, name in given:
            if name not in names:
                raise ConfigError(f"traffic class {name!r} is not one of machine.qos's classes "
                                  f"({qos.name}: {', '.join(names)})", source=point.source,
                                  path=path)


def check_link_series(point: ResolvedPoint) -> None:
    """``outputs.link_series`` samples the native engine's counters: another engine's run is
    refused rather than written without its table."""
    if point.experiment.outputs.link_series is not None and point.engine.name != "native":
        raise ConfigError(f"the {point.engine.name} engine does not sample link series (the "
                          "native engine does)", source=point.source, path="outputs.link_series")


def place_jobs(point: ResolvedPoint, built: Built) -> Placed:
    """Every job's nodes, in its static rank order (see the module docstring); the jobs'
    traffic classes checked first (:func:`check_classes`)."""
    check_classes(point)
    check_link_series(point)
    net = built.network
    jobs = point_jobs(point)
    owner = np.full(net.n_nodes, -1, dtype=np.int64)
    placed: dict[int, np.ndarray] = {}
    # listed nodes first, so that no drawn placement takes them (in file order one could,
    # seed by seed), then the others in file order, ``rest`` last
    order = sorted(jobs, key=lambda j: (j.placement.takes_rest, j.placement.listed() is None,
                                        j.index))
    for job in order:
        ctx = PlacementContext(net, owner < 0, job_stream(point, job.index, PLACEMENT_STREAM),
                               job.name)
        try:
            nodes = np.asarray(job.placement.place(ctx))
        except ConfigError as exc:
            raise relocated(exc, point, job.at("placement")) from None
        nodes = _checked_nodes(point, job, nodes, net.n_nodes)
        if not job.shared:
            held = owner[nodes]
            clash = np.nonzero(held >= 0)[0]
            if clash.size:
                other = jobs[int(held[clash[0]])]
                raise ConfigError(
                    f"job {job.name!r} and job {other.name!r} ({other.field}) both hold node "
                    f"{int(nodes[clash[0]])} ({clash.size} node{'s' if clash.size > 1 else ''} "
                    "in common); jobs share nodes "
                    "only when one of them says shared: true", source=point.source,
                    path=job.at("placement"))
            owner[nodes] = job.index
        placed[job.index] = nodes
    return Placed(tuple(PlacedJob(job, static_order(job, placed[job.index], net),
                                  placed[job.index], net.n_nodes) for job in jobs))


def _checked_nodes(point: ResolvedPoint, job: ResolvedJob, nodes: np.ndarray,
                   n: int) -> np.ndarray:
    """A placement plugin's answer as the runner needs it: distinct machine nodes."""
    def refuse(what: str) -> None:
        raise ConfigError(f"placement {job.placement.name!r} of job {job.name!r} returned "
                          f"{what}", source=point.source, path=job.at("placement"))

    if nodes.ndim != 1 or nodes.dtype.kind not in "iu":
        refuse(f"an array of shape {nodes.shape} and type {nodes.dtype}, not node numbers")
    if nodes.size == 0:
        refuse("no node")
    if int(nodes.min()) < 0 or int(nodes.max()) >= n:
        refuse(f"node {int(nodes.max() if nodes.max() >= n else nodes.min())}; the machine "
               f"has nodes 0 to {n - 1}")
    if np.unique(nodes).size != nodes.size:
        refuse("a node twice")
    count = job.placement.count()
    if count is not None and nodes.size != count:  # the preflight planned with count()
        refuse(f"{nodes.size} nodes where its count() says {count}")
    return nodes.astype(np.int64)


def static_order(job: ResolvedJob, placed: np.ndarray, net: Network) -> np.ndarray:
    """The job's nodes in its rank order, for every order but two-opt's search (a two_opt
    job gets its ``initial`` order here)."""
    order = job.order.order
    if order == "two_opt":
        order = job.order.initial or "ascending"
    if order == "placement":
        return placed
    if order == "cco":
        return cco_order(net, placed)
    return np.sort(placed)


def cco_order(net: Network, nodes: np.ndarray) -> np.ndarray:
    """Chain concatenation ordering (Kesavan and Panda; the thesis' CCO): the job's nodes by
    the breadth-first order of their routers from the router of the job's lowest node (the
    chains of routers each search level reaches, concatenated), nodes of a router in node
    order."""
    routers = net.node_router[nodes].astype(np.int64)
    root = int(net.node_router[int(nodes.min())])
    from scipy.sparse.csgraph import breadth_first_order  # scipy.sparse: 0.15 s at import

    bfs = breadth_first_order(net.adjacency, root, directed=False, return_predecessors=False)
    rank = np.empty(net.n_routers, dtype=np.int64)
    rank[bfs] = np.arange(bfs.shape[0])
    return nodes[np.lexsort((nodes, rank[routers]))]


def rank_units(progs: RankPrograms) -> np.ndarray:
    """The job node each rank runs on (the workload's ``rank_node``, else rank ``i`` on node
    ``i``)."""
    return progs.nodes()


def message_units(progs: RankPrograms) -> tuple[np.ndarray, np.ndarray]:
    """Each message's source and destination job node (one per send)."""
    sends = np.nonzero(progs.op_kind == SEND)[0]
    unit = rank_units(progs)
    return unit[progs.op_rank[sends]], unit[progs.op_peer[sends].astype(np.int64)]


def _paths(point: ResolvedPoint, built: Built, job: ResolvedJob,
           nodes: np.ndarray) -> tuple[PairPaths, np.ndarray]:
    """The minimal paths between every pair of the job's routers, and each slot's router."""
    routers, slot_router = np.unique(built.network.node_router[nodes], return_inverse=True)
    if routers.shape[0] ** 2 > MAX_TWO_OPT_PAIRS:
        raise ConfigError(
            f"job {job.name!r}: two_opt compares the paths between every pair of the job's "
            f"routers, {routers.shape[0]} routers here ({routers.shape[0] ** 2} pairs, at "
            f"most {MAX_TWO_OPT_PAIRS}); use fewer nodes or another order",
            source=point.source, path=job.at("ranks.order"))
    try:
        return router_paths(built.network, built.tables, routers), slot_router
    except TopologyError as exc:
        raise ConfigError(f"job {job.name!r}: {exc}", source=point.source,
                          path="routing") from None


def order_ranks(point: ResolvedPoint, built: Built, placed: Placed,
                programs: dict[int, RankPrograms]) -> Placed:
    """``placed`` with every ``two_opt`` job's nodes reordered by its search."""
    out = []
    for pj in placed.jobs:
        job = pj.job
        order = job.order
        if order.order != "two_opt" or job.index not in programs:
            out.append(pj)
            continue
        src, dst = message_units(programs[job.index])
        slots = pj.nodes
        edges = edges_of(src, dst, slots.shape[0])
        paths, slot_router = _paths(point, built, job, slots)
        iterations = order.iterations if order.iterations is not None else DEFAULT_ITERATIONS
        objective = order.objective or "hops"
        rng = job_stream(point, job.index, ORDER_STREAM, order.seed)
        res = two_opt(edges, np.arange(slots.shape[0]), slot_router, paths, objective,
                      iterations, rng)
        figures = TwoOptFigures(objective, iterations, res.before, res.after, res.accepted)
        out.append(dataclasses.replace(pj, nodes=slots[res.pos], two_opt=figures))
    return Placed(tuple(out))


@dataclasses.dataclass(frozen=True)
class HopFigures:
    """The static figures of a job's messages on the routing's minimal paths."""

    messages: int
    total_hops: int
    busiest_link_messages: int  #: messages on the busiest cable (contention)
    sharing_pairs: int  #: pairs of messages on each cable, summed over the cables

    @property
    def mean_hops(self) -> float | None:
        return self.total_hops / self.messages if self.messages else None


def hop_figures(point: ResolvedPoint, built: Built, pj: PlacedJob,
                progs: RankPrograms) -> HopFigures:
    """Total and mean path hops of the job's messages where its ranks are placed, and the
    busiest cable's message count (``federation hops``)."""
    src, dst = message_units(progs)
    routers = built.network.node_router[pj.nodes].astype(np.int64)
    R = built.network.n_routers
    pair, count = np.unique(routers[src] * R + routers[dst], return_counts=True)
    try:
        first, ports = walk(built.network, built.tables, pair // R, pair % R)
    except TopologyError as exc:
        raise ConfigError(f"job {pj.job.name!r}: {exc}", source=point.source,
                          path="routing") from None
    paths = PairPaths(np.zeros(0, np.int64), first, ports)
    hops = np.diff(first)
    pairs, busiest = sharing(paths, np.arange(pair.shape[0]), count.astype(np.int64))
    return HopFigures(int(src.shape[0]), int((hops * count).sum()), busiest, pairs)
