"""Engine ``simgrid``: the same machine and experiment, simulated by SimGrid's flow model.

``engine: {kind: simgrid}`` in an experiment runs each point through SimGrid (see
``docs/crossval.md``) and reports in the same results schema as the native engine.  The
machine becomes a platform with our own route tables (:mod:`.platform`); every message becomes
one SimGrid communication started at its creation time (:mod:`.worker`, in a child process).
SimGrid is configured as a plain fluid max-min model, the closest it has to a lossless packet
network: ``network/model:CM02`` with ``TCP-gamma`` 0 (no window bound), ``weight-S`` 0 (no
RTT bias in the sharing), latency and bandwidth factors 1 and no cross-traffic.

What the flow model cannot represent is refused before anything runs (:meth:`SimGrid.check`,
exit status 2, naming the field): QoS policies, routings whose path is not a function of source
and destination (Valiant, UGAL), and platforms beyond :data:`.platform.MAX_NETPOINTS`.
Figures that only a packet model has are ignored and documented: packet size, buffers, VCs.

How results map (``results.json``, ``packets-N``, ``ports-N``, ``messages-N``):

* every packet of a message is delivered when SimGrid completes the message; ``injected_ps`` is
  the creation time (SimGrid has no NIC queue: a node's messages share its NIC link);
* ``hops`` is the route's router-to-router hop count, ``minimal`` true, ``via_group`` -1;
* per port, ``bytes`` and ``packets`` are exact (the messages routed through it);
  ``busy_ps`` is ``bytes / bandwidth``, the busy time the fluid model implies; in the window,
  each message's bytes count as spread evenly over its transfer (an estimate: SimGrid does not
  report per-link rates over time), capped at the window; ``stall_ps`` and
  ``peak_input_occupancy_bytes`` are 0 (a flow model has no credit or buffer);
* ``events`` counts SimGrid communications (one per message).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from federation import Engine, Params
from federation.adapters.simgrid import locate
from federation.adapters.simgrid.platform import (
    MAX_NETPOINTS,
    MAX_ROUTES,
    node_routes,
    platform_xml,
    port_figures,
)
from federation.engine.native import NativeRun, PortCounters, RawResult
from federation.errors import ConfigError, SimulationError
from federation.packet_stats import stats_of_packets
from federation.units import PositiveTime

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


@cache
def simgrid_version() -> str | None:
    """SimGrid's version string, asked of a child process (importing SimGrid prints to
    stderr); ``None`` when it is not installed or does not import."""
    if not locate.found():
        return None
    code = ("from federation.adapters.simgrid.locate import import_simgrid as i; "
            "print(i().simgrid_version)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        return None
    return r.stdout.strip() or None


class SimGrid(Engine):
    """SimGrid flow-level model (CM02 max-min sharing) on our own routes (SimGrid 3.32 / 4.x)."""

    name = "simgrid"
    install_hint = locate.INSTALL_HINT

    class Params(Params):
        precision: PositiveTime = Field(
            1e-9, description="SimGrid's time precision (surf/precision, precision/timing): "
            "events closer than this are merged.  1ns is SimGrid's default; 1ps is exact to "
            "our clock but about 5x slower under contention (zero-load figures are the same)")

    @classmethod
    def found(cls) -> bool:
        return locate.found()

    def program(self) -> str | None:
        """The library this engine drives and its version, for ``results.json``."""
        v = getattr(self, "_version", None) or simgrid_version()
        return f"SimGrid {v}" if v else None

    def check(self, point: Any, built: Any) -> None:
        """Refuse, before anything runs, what the flow model cannot represent."""
        from federation.checks import figure_origin

        src = point.source
        qos = point.machine.qos
        if qos.name != "none":
            o = figure_origin(point, "qos.kind")
            raise ConfigError(f"the simgrid engine has no QoS model; qos {qos.name!r} cannot be "
                              "represented (use qos: none, or the native engine)",
                              source=o.source, path=o.path)
        if getattr(point.workload, "closed_loop", False):
            raise ConfigError(
                f"the simgrid engine runs open-loop messages only; workload "
                f"{point.workload.name!r} is rank programs (closed loop), which it does not "
                "run yet (use the native engine)", source=src,
                path=_experiment_field(point, "workload.kind"))
        t = built.tables
        if t.valiant or t.adaptive or getattr(built, "program", None) is not None:
            what = ("adaptive" if t.adaptive or built.program is not None
                    else "Valiant (a random intermediate per packet)")
            raise ConfigError(
                f"the simgrid engine needs one path per source and destination; routing "
                f"{point.routing.name!r} is {what}; use routing: {{algorithm: minimal}}",
                source=src, path=_experiment_field(point, "routing.algorithm"))
        arbiter = point.machine.arbiter.name
        if arbiter != "oldest_first":
            o = figure_origin(point, "router.arbiter")
            raise ConfigError(f"the simgrid engine shares links fluidly and has no output-port "
                              f"arbitration; arbiter {arbiter!r} cannot be represented (use "
                              "oldest_first, or the native engine)", source=o.source, path=o.path)
        net = built.network
        if net.n_nodes + net.n_routers > MAX_NETPOINTS:
            o = figure_origin(point, "topology")
            raise ConfigError(
                f"the simgrid engine builds a Full zone of at most {MAX_NETPOINTS} hosts and "
                f"routers (a table of their square); this machine has {net.n_nodes} nodes and "
                f"{net.n_routers} routers", source=o.source, path=o.path)
        # last: what the experiment asks for is checked even where SimGrid is missing
        if not self.found():
            raise ConfigError(f"engine 'simgrid' is not installed here: {locate.INSTALL_HINT}",
                              source=src, path=_experiment_field(point, "engine.kind"))

    def run(self, job: NativeRun, progress: Any = None) -> RawResult:
        t = job.tables
        if t.valiant or t.adaptive:  # also refused by check(); this guards direct callers
            raise SimulationError("the simgrid engine needs minimal (deterministic) routes")
        if not self.found():
            raise SimulationError(f"SimGrid is not installed: {locate.INSTALL_HINT}")
        wall0 = time.perf_counter()
        msg_time, msg_src, msg_dst, msg_size = _messages(job)
        routes, pair_of = node_routes(job.network, t, msg_src, msg_dst)
        if routes.pair_src.shape[0] > MAX_ROUTES:
            raise ConfigError(
                f"the traffic uses {routes.pair_src.shape[0]} distinct node pairs; the simgrid "
                f"engine writes one route per pair and stops at {MAX_ROUTES}", path="workload")
        xml = platform_xml(job.network, job.links, job.nic_bandwidth, job.router_delay_s,
                           routes)
        start_s, finish_s, info = _run_worker(xml, msg_time, msg_src, msg_dst, msg_size,
                                              self.params.precision)
        self._version = info["version"]
        if (finish_s < 0).any():
            k = int(np.nonzero(finish_s < 0)[0][0])
            raise SimulationError(f"SimGrid did not complete message {k} "
                                  f"(node {msg_src[k]} -> node {msg_dst[k]})")
        finish_ps = np.round(finish_s * 1e12).astype(np.int64)
        return _raw_result(job, routes, pair_of, msg_time, finish_ps,
                           int(round(info["clock_s"] * 1e12)), time.perf_counter() - wall0)


def _experiment_field(point: Any, path: str) -> str:
    """``path`` of the experiment file, or the ``sweep`` entry that set it for this point."""
    for key in point.sweep:
        if path == key or path.startswith(key + "."):
            return f"sweep.{key}"
    return path


def _messages(job: NativeRun) -> tuple[np.ndarray, ...]:
    """The messages behind the job's packets (one row per message, by message index)."""
    pk = job.packets
    n = int(pk.msg.max()) + 1 if pk.count else 0
    first = np.full(n, pk.count, dtype=np.int64)
    np.minimum.at(first, pk.msg, np.arange(pk.count))
    size = np.bincount(pk.msg, weights=pk.size, minlength=n).astype(np.int64)
    return (pk.time_ps[first].astype(np.int64), pk.src[first].astype(np.int64),
            pk.dst[first].astype(np.int64), size)


def _run_worker(xml: str, time_ps: np.ndarray, src: np.ndarray, dst: np.ndarray,
                size: np.ndarray, precision: float) -> tuple[np.ndarray, np.ndarray,
                                                             dict[str, Any]]:
    """Write the inputs, run :mod:`.worker` in a child process, read its results."""
    with tempfile.TemporaryDirectory(prefix="federation-simgrid-") as tmp:
        folder = Path(tmp)
        (folder / "platform.xml").write_text(xml)
        np.savez(folder / "messages.npz", time_ps=time_ps, src=src, dst=dst, size=size)
        (folder / "config.json").write_text(json.dumps({"cfg": list(NETWORK_CONFIG),
                                                          "precision": precision}))
        try:
            r = subprocess.run(
                [sys.executable, "-m", "federation.adapters.simgrid.worker", str(folder)],
                capture_output=True, text=True, timeout=WORKER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise SimulationError(f"SimGrid did not finish within {WORKER_TIMEOUT_S:g} s") \
                from None
        if r.returncode != 0 or not (folder / "result.json").is_file():
            lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
            last = lines[-1] if lines else f"exit status {r.returncode}"
            raise SimulationError(f"SimGrid failed: {last}")
        res = np.load(folder / "result.npz")
        return (res["start_s"], res["finish_s"],
                json.loads((folder / "result.json").read_text()))


def _raw_result(job: NativeRun, routes: Any, pair_of: np.ndarray, msg_time: np.ndarray,
                finish_ps: np.ndarray, end_ps: int, wall_s: float) -> RawResult:
    """Per-packet and per-port arrays in the native engine's layout (see the module
    docstring for what each means under a flow model)."""
    net = job.network
    pt = net.ports
    pk = job.packets
    n_msg = msg_time.shape[0]
    msg_size = np.bincount(pk.msg, weights=pk.size, minlength=n_msg)
    msg_pkts = np.bincount(pk.msg, minlength=n_msg)
    hops_msg = routes.hops[pair_of]
    # per port: the messages (and their packets) routed through it
    lens = np.diff(routes.offsets)[pair_of]
    starts = routes.offsets[pair_of]
    rows = np.repeat(np.arange(n_msg), lens)
    ports = routes.ports[np.repeat(starts, lens) + (np.arange(rows.shape[0])
                                                    - np.repeat(np.cumsum(lens) - lens, lens))]
    P = pt.n_ports
    port_bytes = np.bincount(ports, weights=msg_size[rows], minlength=P).astype(np.int64)
    port_pkts = np.bincount(ports, weights=msg_pkts[rows], minlength=P).astype(np.int64)
    bw, _ = port_figures(net, job.links, job.nic_bandwidth, job.router_delay_s)
    busy = np.round(port_bytes / bw * 1e12).astype(np.int64)
    w0, w1 = job.window if job.window is not None else (0, end_ps)
    span = np.maximum(finish_ps - msg_time, 1).astype(np.float64)
    inside = np.clip(np.minimum(finish_ps, w1) - np.maximum(msg_time, w0), 0, None) / span
    in_win = (msg_time >= w0) & (msg_time < w1)
    busy_w = np.bincount(ports, weights=(msg_size / 1.0)[rows] * inside[rows] / bw[ports] * 1e12,
                         minlength=P)
    busy_w = np.minimum(np.round(busy_w), max(w1 - w0, 0)).astype(np.int64)
    window_ports = PortCounters(
        busy=busy_w,
        bytes=np.bincount(ports, weights=(msg_size * in_win)[rows], minlength=P).astype(np.int64),
        packets=np.bincount(ports, weights=(msg_pkts * in_win)[rows],
                            minlength=P).astype(np.int64),
        stall=np.zeros(P, dtype=np.int64))
    pkt_hops = hops_msg[pk.msg].astype(np.int32)
    stats = stats_of_packets(pk, pk.time_ps.astype(np.int64), finish_ps[pk.msg], pkt_hops,
                             np.ones(pk.count, dtype=np.int8), np.full(pk.count, -1),
                             job.window, job.keep_packets)
    return RawResult(
        packets=stats,
        port_bytes=port_bytes, port_pkts=port_pkts, port_busy=busy,
        port_stall=np.zeros(P, dtype=np.int64), port_peak=np.zeros(P, dtype=np.int64),
        end_ps=end_ps, events=int(n_msg), packet_hops=int(pkt_hops.sum()), wall_s=wall_s,
        window=(int(w0), int(w1)), window_ports=window_ports)
