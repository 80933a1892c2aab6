"""Engine ``simgrid``: the same machine and experiment, simulated by SimGrid's flow model.

``engine: {kind: simgrid}`` in an experiment runs each point through SimGrid (see
``docs/crossval.md``) and reports in the same results schema as the native engine.  The
machine becomes a platform with our own route tables (:mod:`.platform`); every message becomes
one SimGrid communication started at its creation time (:mod:`.worker`, in a child process);
rank programs run as one actor per rank (:mod:`.ranks`) and come back as the native engine's
program state (:mod:`.program_run`), so the summary and tables are made by the same code.
SimGrid is configured as a plain fluid max-min model, the closest it has to a lossless packet
network: ``network/model:CM02`` with ``TCP-gamma`` 0 (no window bound), ``weight-S`` 0 (no
bandwidth term in a flow's sharing weight), latency and bandwidth factors 1 and no
cross-traffic.  CM02 still weights each flow by its route's summed latency (its sharing
penalty), so flows sharing a link get shares in proportion to 1 / latency: SimGrid's model,
kept as it is (``docs/crossval.md``).

What the flow model cannot represent is refused before anything runs (:meth:`SimGrid.check`,
exit status 2, naming the field): QoS policies, routings whose path is not a function of source
and destination (Valiant, UGAL), platforms beyond :data:`.platform.MAX_NETPOINTS`, rank
programs with open-loop traffic beside them (a ``background``, or open-loop jobs beside
closed-loop ones), and a ``precision`` too coarse for the machine
(:func:`precision_limit`: SimGrid merges events closer than it).  The worker runs in a process
group of its own, stopped whole on its time limit, Ctrl-C or an error; when it fails its
folder is kept and named (:func:`_run_worker`).
Figures that only a packet model has are ignored and documented: packet size, buffers, VCs,
credit delay.

How results map (``results.json``, ``packets-N``, ``ports-N``, ``messages-N``):

* every packet of a message is delivered when SimGrid completes the message; ``injected_ps`` is
  the creation time (SimGrid has no NIC queue: a node's messages share its NIC link); rank
  programs' packets likewise, per flow (data, rendezvous request and reply:
  :func:`.program_run.packet_rows`);
* ``hops`` is the route's router-to-router hop count, ``minimal`` true, ``via_group`` -1;
* per port, ``bytes`` and ``packets`` are exact (the messages routed through it);
  ``busy_ps`` is ``bytes / bandwidth``, the busy time the fluid model implies; in the window,
  each message's bytes and packets count as spread evenly over its transfer (an estimate:
  SimGrid does not report per-link rates over time), the bytes and busy time capped at what
  the port carries in the window; ``stall_ps`` and
  ``peak_input_occupancy_bytes`` are 0 (a flow model has no credit or buffer);
* ``events`` counts SimGrid communications (one per message).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from federation import Engine, Params
from federation.adapters import process
from federation.adapters.simgrid import locate, program_run
from federation.adapters.simgrid.platform import (
    MAX_NETPOINTS,
    MAX_ROUTES,
    node_routes,
    platform_xml,
    port_figures,
    shortest_flow,
)
from federation.adapters.simgrid.program_run import Flows
from federation.engine.native import NativeRun, PortCounters, RawResult
from federation.engine.packet_stats import stats_of_packets
from federation.engine.reports import stuck_report
from federation.engine.state import Prog
from federation.errors import ConfigError, SimulationError
from federation.models.units import PositiveTime, format_time
from federation.pipeline.points import experiment_field

#: SimGrid configuration for comparison with a packet engine (see the module docstring)
NETWORK_CONFIG = (
    "network/model:CM02",
    "network/TCP-gamma:0",
    "network/weight-S:0",
    "network/latency-factor:1",
    "network/bandwidth-factor:1",
    "network/crosstraffic:0",
)
#: seconds a worker may run before it is stopped (a platform this adapter accepts runs in far
#: less; a hung SimGrid must not hang a validation suite)
WORKER_TIMEOUT_S = 3600.0
#: SimGrid's own time precision, the default where the machine allows it
DEFAULT_PRECISION_S = 1e-9
#: the precision may be at most this fraction of the shortest time a message can take (see
#: :func:`precision_limit`): each event of a flow is then at most 2 % of its duration early
PRECISION_FRACTION = 1 / 50


@cache
def simgrid_version() -> str | None:
    """SimGrid's version string, asked of a child process (importing SimGrid prints to
    stderr); ``None`` when it is not installed or does not import."""
    if not locate.found():
        return None
    code = ("from federation.adapters.simgrid.locate import import_simgrid as i; "
            "print(i().simgrid_version)")
    try:
        r = process.run([sys.executable, "-c", code], 120.0)
    except (OSError, process.TimedOut):
        return None
    if r.returncode != 0:
        return None
    return r.stdout.strip() or None


def precision_limit(job_or_built: Any, router_delay_s: float) -> tuple[float, str]:
    """The coarsest ``precision`` that gives a correct answer on this machine, and why.

    SimGrid processes every event that falls within ``precision`` after the current one
    together with it (``precision/timing``, ``surf/precision`` in 3.x), so an event may happen
    up to ``precision`` early, and the errors add up along a chain of dependent events.
    Every message takes at least :func:`.platform.shortest_flow` (a NIC link's latency, an
    ejection link's, one byte's serialisation); keeping the precision at
    :data:`PRECISION_FRACTION` of that keeps each event of a flow within 2 % of the flow's
    duration.  Measured on the 72-node dragonfly (shortest flow 70 ns; a 64-rank allreduce,
    12 dependent steps): 1 ns (1/70) is 0.03 % off the exact figure, 5 ns 0.75 %, 10 ns
    1.35 %, and 1 us turns an 8 B ping-pong of 763 ns into 6 ns (a whole latency merged
    away); with 1 ns links and no router delay (shortest flow 2.18 ns) the same allreduce is
    2.8 % off at 1 ns and 0.02 % at the limit, 43.55 ps (docs/crossval.md)."""
    net, links, nic_bw = job_or_built.network, job_or_built.links, job_or_built.nic_bandwidth
    shortest, why = shortest_flow(net, links, nic_bw, router_delay_s)
    return shortest * PRECISION_FRACTION, why


class SimGrid(Engine):
    """SimGrid flow-level model (CM02 max-min sharing) on our own routes (SimGrid 3.32 / 4.x)."""

    name = "simgrid"
    install_hint = locate.INSTALL_HINT

    class Params(Params):
        precision: PositiveTime | None = Field(
            None, description="SimGrid's time precision (precision/timing; surf/precision in "
            "3.x): events closer than this are merged, each up to this much early.  Default: "
            "SimGrid's 1ns, or 1/50 of the shortest time a message can take on the machine "
            "when that is finer; a coarser value is refused.  1ps is exact to our clock but "
            "slower under contention (zero-load figures are the same)")

    @classmethod
    def found(cls) -> bool:
        return locate.found()

    def program(self) -> str | None:
        """The library this engine drives and its version, for ``results.json``."""
        v = getattr(self, "_version", None) or simgrid_version()
        return f"SimGrid {v}" if v else None

    def check(self, point: Any, built: Any) -> None:
        """Refuse, before anything runs, what the flow model cannot represent."""
        from federation.pipeline.points import figure_origin

        src = point.source
        qos = point.machine.qos
        if qos.name != "none":
            o = figure_origin(point, "qos.kind")
            raise ConfigError(f"the simgrid engine has no QoS model; qos {qos.name!r} cannot be "
                              "represented (use qos: none, or the native engine)",
                              source=o.source, path=o.path)
        self._check_jobs(point)
        t = built.tables
        self._check_spread(point, built)
        if t.valiant or t.adaptive or getattr(built, "program", None) is not None:
            what = ("adaptive" if t.adaptive or built.program is not None
                    else "Valiant (a random intermediate per packet)")
            raise ConfigError(
                f"the simgrid engine needs one path per source and destination; routing "
                f"{point.routing.name!r} is {what}; use routing: {{algorithm: minimal}}",
                source=src, path=experiment_field(point, "routing.algorithm"))
        arbiter = point.machine.arbiter.name
        if arbiter != "oldest_first":
            o = figure_origin(point, "router.arbiter")
            raise ConfigError(f"the simgrid engine shares links fluidly and has no output-port "
                              f"arbitration; arbiter {arbiter!r} cannot be represented (use "
                              "oldest_first, or the native engine)", source=o.source, path=o.path)
        if point.machine.machine.router.model != "default":
            o = figure_origin(point, "router.model")
            raise ConfigError(f"the simgrid engine shares links fluidly and has no router "
                              f"allocators; router.model "
                              f"{point.machine.machine.router.model!r} cannot be represented "
                              "(use the default model, or the native engine)",
                              source=o.source, path=o.path)
        net = built.network
        if net.n_nodes + net.n_routers > MAX_NETPOINTS:
            o = figure_origin(point, "topology")
            raise ConfigError(
                f"the simgrid engine builds a Full zone of at most {MAX_NETPOINTS} hosts and "
                f"routers (a table of their square); this machine has {net.n_nodes} nodes and "
                f"{net.n_routers} routers", source=o.source, path=o.path)
        self._check_precision(point, built)
        # last: what the experiment asks for is checked even where SimGrid is missing
        if not self.found():
            raise ConfigError(f"engine 'simgrid' is not installed here: {locate.INSTALL_HINT}",
                              source=src, path=experiment_field(point, "engine.kind"))

    def _check_spread(self, point: Any, built: Any) -> None:
        """A minimal routing whose ``spread`` picks its own equal-cost port (a routing program
        instead of the tables' path) is refused naming ``routing.spread``, not the algorithm:
        the platform's routes are the tables' paths, one per source and destination, so only
        ``spread: table`` is what SimGrid would run."""
        spread = getattr(getattr(point.routing, "params", None), "spread", None)
        if getattr(built, "program", None) is None or spread in (None, "table"):
            return
        how = {"random": "draws a random one per packet and hop",
               "hash": "picks one by a hash of the destination and the current router",
               "lowest": "takes the lowest-numbered one"}.get(spread, "picks its own one")
        raise ConfigError(
            f"the simgrid engine routes every source and destination along the one path of "
            f"the route tables; spread {spread!r} of routing {point.routing.name!r} {how} "
            "among the equal-cost minimal ports; the simgrid engine supports spread: table "
            "only (the default: leave spread out, or use the native engine)",
            source=point.source, path=experiment_field(point, "routing.spread"))

    def _check_jobs(self, point: Any) -> None:
        """Jobs are node numbers to SimGrid (hosts): several closed-loop jobs run as one set
        of rank actors, several open-loop ones as one message list, and a closed-loop job's
        ``start`` is a compute before its ranks' first operations.  What it cannot do is run
        open-loop traffic beside rank programs."""
        from federation.pipeline.points import point_jobs

        jobs = point_jobs(point)
        if any(j.closed_loop for j in jobs):
            beside = next((j for j in jobs if not j.closed_loop), None)
            if beside is not None:
                what = ("background" if point.experiment.jobs is None
                        else f"the open-loop job {beside.name!r}")
                raise ConfigError(
                    "the simgrid engine runs rank programs without background traffic (open-"
                    "loop traffic beside them): its messages would need their own actors "
                    "beside the ranks' and a window cut at the programs' end, which it does "
                    "not do (drop "
                    f"{what}, or use the native engine)", source=point.source,
                    path=experiment_field(point, beside.field))

    def _check_precision(self, point: Any, built: Any) -> None:
        """Refuse a ``precision`` too coarse for the machine (see :func:`precision_limit`)."""
        given = self.params.precision
        if given is None:
            return
        limit, why = precision_limit(built, float(point.machine.machine.router.delay))
        if given > limit:
            raise ConfigError(_too_coarse(given, limit, why), source=point.source,
                              path=experiment_field(point, "engine.precision"))

    def precision_s(self, job: NativeRun) -> float:
        """The precision the worker runs with: the given one, else SimGrid's 1 ns capped at
        the machine's limit; a given one above the limit is refused here too (for callers
        that skip :meth:`check`)."""
        limit, why = precision_limit(job, job.router_delay_s)
        given = self.params.precision
        if given is None:
            return min(DEFAULT_PRECISION_S, limit)
        if given > limit:
            raise ConfigError(_too_coarse(given, limit, why), path="engine.precision")
        return float(given)

    def run(self, job: NativeRun, progress: Any = None) -> RawResult:
        t = job.tables
        if t.valiant or t.adaptive:  # also refused by check(); this guards direct callers
            raise SimulationError("the simgrid engine needs minimal (deterministic) routes")
        if not self.found():
            raise SimulationError(f"SimGrid is not installed: {locate.INSTALL_HINT}")
        if job.programs is not None:
            if job.packets.count:  # also refused by check(): background traffic
                raise SimulationError("the simgrid engine runs rank programs without "
                                      "background traffic")
            return self._run_programs(job)
        wall0 = time.perf_counter()
        msg_time, msg_src, msg_dst, msg_size = _messages(job)
        xml, routes, pair_of = _platform(job, msg_src, msg_dst)
        out, info = _run_worker(xml, {"messages.npz": dict(time_ps=msg_time, src=msg_src,
                                                            dst=msg_dst, size=msg_size)},
                                "result.npz", self.precision_s(job))
        self._version = info["version"]
        finish_s = out["finish_s"]
        if (finish_s < 0).any():
            k = int(np.nonzero(finish_s < 0)[0][0])
            raise SimulationError(f"SimGrid did not complete message {k} "
                                  f"(node {msg_src[k]} -> node {msg_dst[k]})")
        finish_ps = np.round(finish_s * 1e12).astype(np.int64)
        pk = job.packets
        fl = Flows(msg_src, msg_dst, np.bincount(pk.msg, weights=pk.size,
                                                 minlength=msg_time.shape[0]).astype(np.int64),
                   np.bincount(pk.msg, minlength=msg_time.shape[0]).astype(np.int64),
                   msg_time, finish_ps)
        return _raw_result(job, fl, routes, pair_of, finish_ps[pk.msg],
                           int(round(info["clock_s"] * 1e12)), len(fl),
                           time.perf_counter() - wall0)

    def _run_programs(self, job: NativeRun) -> RawResult:
        """Rank programs: one SimGrid actor per rank (:mod:`.ranks`); their records become
        the native program state (:mod:`.program_run`)."""
        t = job.programs
        assert t is not None
        wall0 = time.perf_counter()
        src, dst = program_run.pairs(t)
        xml, routes, _ = _platform(job, src, dst)
        arrays, figures = program_run.worker_inputs(t, job.nic_bandwidth)
        out, info = _run_worker(xml, {"programs.npz": arrays,
                                      "program-figures.json": figures},
                                "program-result.npz", self.precision_s(job))
        self._version = info["version"]
        end_ps = int(round(info["clock_s"] * 1e12))
        rec = {k: out[k] for k in (*program_run.OP_RECORDS, *program_run.MSG_RECORDS)}
        fl = program_run.flows(t, rec)
        n_nodes = job.network.n_nodes
        pair_of = np.searchsorted(routes.pair_src.astype(np.int64) * n_nodes + routes.pair_dst,
                                  fl.src * n_nodes + fl.dst)
        hops = routes.hops[pair_of]
        pg = program_run.program_state(t, rec, out["rank_finish"], fl, hops)
        if (pg.op_finish[:t.programs.n_ops] < 0).any():
            raise SimulationError(stuck_report(job, pg, end_ps))
        end_ps = int(pg.rank_finish.max()) if t.programs.n_ranks else 0
        none = np.zeros(0, dtype=np.int64)
        raw = _raw_result(job, fl, routes, pair_of, none, end_ps, int(info["comms"]),
                          time.perf_counter() - wall0, programs=pg)
        if job.keep_packets and job.keep_program_packets:  # as native: outputs.packets
            raw.packets.program_packets = program_run.packet_rows(t, fl, hops)
        return raw


def _too_coarse(given: float, limit: float, why: str) -> str:
    return (f"{format_time(given)} is too coarse for this machine: SimGrid runs events closer "
            f"than the precision together, so a message may arrive up to that much early.  It "
            f"must be at most 1/{round(1 / PRECISION_FRACTION)} of the shortest time a message "
            f"can take here, {why}: at most {format_time(limit)}; leave it out for SimGrid's "
            "1ns (finer where the machine needs it)")


def _messages(job: NativeRun) -> tuple[np.ndarray, ...]:
    """The messages behind the job's packets (one row per message, by message index)."""
    pk = job.packets
    n = int(pk.msg.max()) + 1 if pk.count else 0
    first = np.full(n, pk.count, dtype=np.int64)
    np.minimum.at(first, pk.msg, np.arange(pk.count))
    size = np.bincount(pk.msg, weights=pk.size, minlength=n).astype(np.int64)
    return (pk.time_ps[first].astype(np.int64), pk.src[first].astype(np.int64),
            pk.dst[first].astype(np.int64), size)


def _platform(job: NativeRun, src: np.ndarray, dst: np.ndarray) -> tuple[str, Any, np.ndarray]:
    """The platform XML with the routes of the node pairs (``src[i]``, ``dst[i]``), the
    routes, and each pair's route index; refused above :data:`MAX_ROUTES` pairs."""
    routes, pair_of = node_routes(job.network, job.tables, src, dst)
    if routes.pair_src.shape[0] > MAX_ROUTES:
        raise ConfigError(
            f"the traffic uses {routes.pair_src.shape[0]} distinct node pairs; the simgrid "
            f"engine writes one route per pair and stops at {MAX_ROUTES}", path="workload")
    xml = platform_xml(job.network, job.links, job.nic_bandwidth, job.router_delay_s, routes)
    return xml, routes, pair_of


def _run_worker(xml: str, inputs: dict[str, Any], output: str,
                precision: float) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Write the platform and ``inputs`` (``.npz``: a dict of arrays; ``.json``: a document),
    run :mod:`.worker` in a child process, read its ``output`` arrays and ``result.json``.

    The worker runs in a process group of its own (:mod:`federation.adapters.process`),
    stopped whole on the time limit, Ctrl-C or an error.  Its folder is removed after a
    success or an interruption; when the worker fails, the folder is kept (with the worker's
    ``worker.stdout`` and ``worker.stderr``) and the message names it, says how the worker
    ended (exit status or signal) and quotes its last stderr lines other than SimGrid's log
    chatter."""
    folder = Path(tempfile.mkdtemp(prefix="federation-simgrid-"))
    try:
        (folder / "platform.xml").write_text(xml)
        for name, value in inputs.items():
            if name.endswith(".npz"):
                np.savez(folder / name, **value)
            else:
                (folder / name).write_text(json.dumps(value))
        (folder / "config.json").write_text(json.dumps({"cfg": list(NETWORK_CONFIG),
                                                          "precision": precision}))
        argv = [sys.executable, "-m", "federation.adapters.simgrid.worker", str(folder)]
        try:
            r = process.run(argv, WORKER_TIMEOUT_S)
        except process.TimedOut as exc:
            _keep_output(folder, exc.stdout, exc.stderr)
            raise SimulationError(f"SimGrid did not finish within {WORKER_TIMEOUT_S:g} s; its "
                                  f"worker was stopped; its inputs and output are kept in "
                                  f"{folder}") from None
        if r.returncode != 0 or not (folder / "result.json").is_file():
            _keep_output(folder, r.stdout, r.stderr)
            ended = process.how_it_ended(r.returncode)
            if r.returncode == 0:
                ended += " without writing its results"
            tail = process.relevant_tail(r.stderr)
            raise SimulationError(f"SimGrid's worker {ended}" + (f": {tail}" if tail else "")
                                  + f" (its inputs and output are kept in {folder})")
        with np.load(folder / output) as res:
            out = {k: res[k] for k in res.files}
        info = json.loads((folder / "result.json").read_text())
    except SimulationError:
        raise  # the folder is kept: the message names it
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    shutil.rmtree(folder, ignore_errors=True)
    return out, info


def _keep_output(folder: Path, stdout: str, stderr: str) -> None:
    (folder / "worker.stdout").write_text(stdout)
    (folder / "worker.stderr").write_text(stderr)


def _raw_result(job: NativeRun, fl: Flows, routes: Any, pair_of: np.ndarray,
                deliver_ps: np.ndarray, end_ps: int, events: int, wall_s: float,
                programs: Prog | None = None) -> RawResult:
    """The one place a :class:`RawResult` is made: per-packet arrays of the open-loop packets
    (``deliver_ps`` each; none with rank programs) and per-port arrays from the flows that
    crossed the network (see the module docstring for what each means under a flow model)."""
    pt = job.network.ports
    pk = job.packets
    n = len(fl)
    went = fl.start_ps >= 0
    fin = np.where(fl.finish_ps >= 0, fl.finish_ps, end_ps)
    hops_flow = routes.hops[pair_of] if n else np.zeros(0, dtype=np.int32)
    # per port: the flows (and their packets) routed through it
    lens = np.diff(routes.offsets)[pair_of] * went
    starts = routes.offsets[pair_of]
    rows = np.repeat(np.arange(n), lens)
    ports = routes.ports[np.repeat(starts, lens) + (np.arange(rows.shape[0])
                                                    - np.repeat(np.cumsum(lens) - lens, lens))]
    P = pt.n_ports
    size = fl.size.astype(np.float64)
    port_bytes = np.bincount(ports, weights=size[rows], minlength=P).astype(np.int64)
    port_pkts = np.bincount(ports, weights=fl.packets[rows], minlength=P).astype(np.int64)
    bw, _ = port_figures(job.network, job.links, job.nic_bandwidth, job.router_delay_s)
    busy = np.round(port_bytes / bw * 1e12).astype(np.int64)
    w0, w1 = job.window if job.window is not None else (0, end_ps)
    t0 = fl.start_ps
    span = np.maximum(fin - t0, 1).astype(np.float64)
    inside = np.clip(np.minimum(fin, w1) - np.maximum(t0, w0), 0, None) / span
    # in the window: each flow's bytes and packets spread evenly over its transfer, then no
    # more than the port can carry there (before stop 48 every byte of a flow that started
    # in the window counted: a 1 MiB message put 1 MiB in a 1 us window of a 5.6 GB/s link)
    cap = max(w1 - w0, 0)
    busy_w = np.bincount(ports, weights=size[rows] * inside[rows] / bw[ports] * 1e12,
                         minlength=P)
    busy_w = np.minimum(np.round(busy_w), cap).astype(np.int64)
    bytes_w = np.bincount(ports, weights=size[rows] * inside[rows], minlength=P)
    bytes_w = np.minimum(np.round(bytes_w), np.floor(bw * cap / 1e12)).astype(np.int64)
    window_ports = PortCounters(
        busy=busy_w, bytes=bytes_w,
        packets=np.round(np.bincount(ports, weights=fl.packets[rows] * inside[rows],
                                     minlength=P)).astype(np.int64),
        stall=np.zeros(P, dtype=np.int64))
    pkt_hops = (hops_flow[pk.msg] if pk.count else np.zeros(0)).astype(np.int32)
    stats = stats_of_packets(pk, pk.time_ps.astype(np.int64), deliver_ps.astype(np.int64),
                             pkt_hops, np.ones(pk.count, dtype=np.int8), np.full(pk.count, -1),
                             job.window, job.keep_packets)
    return RawResult(
        packets=stats,
        port_bytes=port_bytes, port_pkts=port_pkts, port_busy=busy,
        port_stall=np.zeros(P, dtype=np.int64), port_peak=np.zeros(P, dtype=np.int64),
        end_ps=end_ps, events=int(events),
        packet_hops=int(pkt_hops.sum()) + int((hops_flow * fl.packets * went).sum()
                                              if programs is not None else 0),
        wall_s=wall_s, window=(int(w0), int(w1)), window_ports=window_ports,
        programs=programs)
