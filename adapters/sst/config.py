"""One experiment point as an SST Python configuration file (the ``.py`` that ``sst`` runs).

:func:`build_config` checks that the point can be expressed *exactly* in merlin (refusing with
one :class:`~federation.errors.ConfigError` that names the field otherwise), maps our network
onto merlin's port numbering (:mod:`.topologies`) and renders a self-contained configuration:
data tables (router parameters, cables, hosts) followed by a short loop that creates the
components.  The same point always gives the same bytes (sorted keys, no time stamps, no
absolute paths), so a configuration can be diffed, cached and reviewed.

What the file contains is documented in ``docs/sst.md``, with the table of which machine field
becomes which merlin parameter.
"""

from __future__ import annotations

from typing import Any

from federation.errors import ConfigError
from federation.models.units import format_rate, seconds_to_ps
from federation.network import Network
from federation.pipeline.points import (
    Placed,
    ResolvedPoint,
    figure_origin,
    link_figure,
    point_jobs,
)

from . import ember
from .jobs import JOB_HOSTS, EndpointJob, endpoint_jobs, endpoint_tables
from .options import SstOptions
from .qos import qos_router_params
from .script import (
    NIC_STATS,
    ROUTER_STATS,
    STATS_FILE,
    SstConfig,
    build_script,
    duration,
    header,
    pformat,
    rate,
    size,
)
from .topologies import Refusal, SstNetwork, map_network

#: merlin's dragonfly names its port groups; per-class figures go to ``<param>:<group>``
DRAGONFLY_PORT_GROUP = {"terminal": "host", "local": "group", "global": "global"}
#: merlin's dragonfly adds this many flits to the Valiant side in ugal (not a parameter)
MERLIN_UGAL_BIAS_FLITS = 50


def refusal_error(point: ResolvedPoint, r: Refusal) -> ConfigError:
    """The :class:`ConfigError` for a :class:`Refusal`, located in the file that set the field
    (a workload field of a job: the job's)."""
    if r.document == "experiment":
        field_ = r.field
        if point.experiment.jobs is not None and (field_ == "workload"
                                                  or field_.startswith("workload.")):
            field_ = point_jobs(point)[0].workload_field + field_[len("workload"):]
        return ConfigError(f"engine sst: {r.message}", source=point.source, path=field_)
    o = figure_origin(point, r.field)
    return ConfigError(f"engine sst: {r.message}", source=o.source, path=o.path)


def build_config(point: ResolvedPoint, network: Network,
                 options: SstOptions | None = None, placed: Placed | None = None) -> SstConfig:
    """The SST configuration of ``point`` on its built ``network`` (``placed``: its jobs on
    their nodes, in rank order), or a ConfigError naming the field that merlin cannot
    express."""
    opts = options or SstOptions()
    try:
        return _build(point, network, opts, placed)
    except Refusal as r:
        raise refusal_error(point, r) from None


def job_nodes(point: ResolvedPoint, net: Network, placed: Placed | None) -> Any:
    """The machine nodes of a closed-loop point's one job (``None``: every node in order), or
    a Refusal naming what ember cannot express: several jobs, a job's start, slowdown runs."""
    jobs = point_jobs(point)
    if len(jobs) > 1 and jobs[1].field == "background":
        raise Refusal("background", "engine sst runs rank programs (ember on firefly NICs) "
                      "without background traffic: merlin's offered_load endpoints would need "
                      "the same nodes' host ports", document="experiment")
    if len(jobs) > 1:
        raise Refusal(jobs[1].field, f"engine sst runs rank programs (ember) as one job; job "
                      f"{jobs[1].name!r} would be a second", document="experiment")
    if point.experiment.jobs is None:
        return None
    job = jobs[0]
    if point.experiment.slowdown:
        raise Refusal("slowdown", "engine sst does not run jobs alone for slowdown",
                      document="experiment")
    if job.start_ps:
        raise Refusal(job.at("start"), "engine sst starts its endpoints at 0; a job's start "
                      "is not mapped", document="experiment")
    pj = placed.of(job) if placed is not None else None
    if pj is None or pj.whole:
        return None
    return pj.nodes


def _build(point: ResolvedPoint, net: Network, opts: SstOptions,
           placed: Placed | None = None) -> SstConfig:
    machine = point.machine.machine
    exp = point.experiment
    kind = point.machine.topology.name
    closed = ember.is_closed_loop(point)
    _check_router(point)
    jobs: list[EndpointJob] | None = None
    if closed:  # rank programs: ember motifs on firefly endpoints (adapters/sst/ember.py)
        nodes = job_nodes(point, net, placed)
        ember.ember_job(point, net.n_nodes, nodes)  # refuses every QoS policy but none
        qos: dict[str, Any] = {}
    else:
        qos = qos_router_params(point)
        jobs = endpoint_jobs(point, net, placed)
        for job in point_jobs(point):
            _check_workload(point, job.workload, job.workload_field)
    sst_net = map_network(kind, point.machine.topology.params, net, point.routing.name)
    figures = {c: {a: link_figure(machine, point.machine.topology, c, a)[0]
                   for a in ("bandwidth", "latency", "buffer")} for c in net.link_classes}
    packet = int(machine.packet_size)
    flit = int(opts.flit_size or packet)
    _check_flits(flit, packet, figures, opts)
    parallel = opts.ranks > 1 or opts.threads > 1 or bool(opts.launcher)
    for c, f in sorted(figures.items()):
        if parallel and seconds_to_ps(f["latency"]) == 0:
            raise Refusal(f"links.{c}.latency", "a zero-latency link cannot cross SST's "
                          "partitions (ranks or threads), which need a minimum link latency "
                          "as their lookahead; give the links a latency or run sst serially")
    vns = int(qos.get("num_vns", 1))
    if machine.router.vcs < sst_net.vcs * vns:
        per = f" ({vns} classes x {sst_net.vcs})" if vns > 1 else ""
        raise Refusal("router.vcs", f"merlin's {sst_net.topology} with routing "
                      f"{point.routing.name!r} uses {sst_net.vcs} VCs per VN but the machine "
                      f"has {machine.router.vcs}; set router.vcs to at least "
                      f"{sst_net.vcs * vns}{per}")
    router = {**_router_params(sst_net, figures, machine, flit, opts, point.routing.name), **qos}
    _check_routing_params(point)
    if point.routing.name == "ugal":
        bias = point.routing.params.bias
        _check_ugal_bias(packet if bias is None else bias, flit)
    nic_bw = float(machine.nic.bandwidth or figures["terminal"]["bandwidth"])
    if nic_bw != float(figures["terminal"]["bandwidth"]):
        raise Refusal("nic.bandwidth", f"nic.bandwidth {format_rate(nic_bw)} differs from the "
                      f"terminal links' {format_rate(float(figures['terminal']['bandwidth']))}: "
                      "merlin's two ends of a link settle on the lower bandwidth in both "
                      "directions, so the router-to-node direction would run at the NIC's "
                      "figure too, where ours keeps the terminal link's; leave nic.bandwidth "
                      "unset (or equal) with engine sst")
    if closed:
        notes = list(sst_net.notes) + _standing_notes(opts, flit, packet)[:1] + \
            [router_note(machine), CREDIT_NOTE]
        return ember.build(point, sst_net, router, figures, nic_bw, notes, nodes)
    stop = exp.stop
    w0 = seconds_to_ps(stop.warmup)
    w1 = w0 + seconds_to_ps(float(stop.measure or 0))
    load = jobs[0].load if jobs else float(point.workload.params.load)
    endpoint = {
        "offered_load": load, "num_peers": net.n_nodes, "link_bw": rate(nic_bw),
        "message_size": size(packet), "pattern": "merlin.targetgen.uniform",
        "warmup_time": f"{w0}ps", "collect_time": f"{w1 - w0}ps",
    }
    nic = {"link_bw": rate(nic_bw), "input_buf_size": size(figures["terminal"]["buffer"]),
           "output_buf_size": size(figures["terminal"]["buffer"])}
    latency = {c: duration(f["latency"]) for c, f in figures.items()}
    notes = list(sst_net.notes) + _standing_notes(opts, flit, packet) + [
        router_note(machine), CREDIT_NOTE]
    if vns > 1:
        notes.append("QoS strict_priority: merlin.arb.output.qos.multi [100, 0] serves VN 0 "
                     "(the first class) whenever it can send; within a class merlin "
                     "round-robins the VN's VCs (ours: oldest packet first)")
    text = render(point, sst_net, router, endpoint, nic, latency, (w0, w1), notes, jobs)
    bw = {c: float(f["bandwidth"]) for c, f in figures.items()}
    return SstConfig(text, sst_net, net.n_nodes, (w0, w1), nic_bw, bw, notes,
                     jobs=[(j.load, j.vn, j.nodes.tolist()) for j in jobs or []],
                     classes=list(point.machine.qos.class_names()) if vns > 1 else [])


#: the router fields merlin's hr_router runs as our engine does only at one value (their
#: defaults, so a resolved document that writes every field passes), and why
ROUTER_FIELDS = {
    "model": ("default", "hr_router is merlin's one router (input buffers, a crossbar clocked "
              "at xbar_bw / flit_size, output buffers); it has no clocked input-queued model "
              "with separable allocators and an internal speedup like BookSim's"),
    "switching": ("store_and_forward", "hr_router has no switching choice: it moves a packet "
                  "in flits of engine.flit_size (by default one flit, the whole packet, as "
                  "our store and forward); no setting of it is virtual cut-through"),
    "credit_delay": (0.0, "hr_router has no parameter for a credit delay of its own (its "
                     "input_latency, our router.delay, already delays every credit that "
                     "reaches a router: see the header's note)"),
    "injection_vc": (None, "merlin.linkcontrol injects every packet on its virtual network's "
                     "first VC (our 'zero'); nothing draws the VC per packet"),
}


def _check_router(point: ResolvedPoint) -> None:
    """Refuse a router field merlin's hr_router cannot run as ours does (:data:`ROUTER_FIELDS`,
    and an arbiter other than the default), naming it, rather than write a configuration
    that silently runs merlin's own behaviour instead.  ``injection_vc`` passes at ``zero``
    (merlin's) and at the default ``spread`` (stated in the header's differences)."""
    router = point.machine.machine.router
    for name, (ok, why) in ROUTER_FIELDS.items():
        value = getattr(router, name)
        if (value in ("zero", "spread")) if name == "injection_vc" else value == ok:
            continue
        shown = duration(value) if name == "credit_delay" else repr(value)
        keep = "0" if name == "credit_delay" else repr(ok or "zero")
        raise Refusal(f"router.{name}", f"router.{name} {shown} is not mapped to merlin: "
                      f"{why}; use {keep} with engine sst")
    if router.arbiter.kind != "oldest_first":
        raise Refusal("router.arbiter", f"router.arbiter {router.arbiter.kind!r} is not mapped "
                      "to merlin: hr_router's crossbar arbitration is its own (xbar_arb, "
                      "merlin.xbar_arb_lru; merlin.xbar_arb_age and merlin.xbar_arb_rr exist "
                      "but have not been checked against ours) and its output VCs are served "
                      "round-robin, whatever router.arbiter says; use the default "
                      "'oldest_first' with engine sst (its difference is stated in the header)")


def _check_routing_params(point: ResolvedPoint) -> None:
    """Refuse a routing parameter other than its default (``bias`` is checked on its own):
    merlin's dragonfly takes only its ``algorithm`` and chooses paths, VCs and Valiant
    intermediates its own way, so ``spread``, ``vc_step``, ``intermediate`` or ``decide``
    would otherwise be dropped without a word."""
    params = point.routing.params
    if params is None or not hasattr(params, "model_dump"):
        return
    given = params.model_dump(mode="json")
    default = type(params)().model_dump(mode="json")
    for name in sorted(given):
        if name != "bias" and given[name] != default[name]:
            raise Refusal(f"routing.{name}", f"routing {point.routing.name!r} {name} "
                          f"{given[name]!r} is not mapped to merlin: its {point.routing.name} "
                          "takes no such parameter and chooses paths, VCs and intermediates "
                          f"its own way; use the default {default[name]!r} with engine sst",
                          document="experiment")


def router_note(machine: Any) -> str:
    """The header's line on what the default router fields leave different."""
    inject = ("; merlin.linkcontrol injects every packet on its VN's first VC (as "
              "router.injection_vc: zero), ours spreads them over the VCs (spread)"
              if machine.router.injection_vc == "spread" else "")
    return ("arbitration: hr_router allocates its crossbar least-recently-used first "
            "(merlin.xbar_arb_lru) and serves output VCs round-robin; ours sends the oldest "
            f"waiting packet (router.arbiter: oldest_first){inject}")


#: the header's line on credits (every configuration: hr_router's input_latency is ours)
CREDIT_NOTE = ("credits: hr_router's input_latency (our router.delay) delays everything that "
               "arrives on a router's links, credits too, so the credits of a router's output "
               "come back router.delay later than ours (router.credit_delay 0); a NIC's "
               "credits are not delayed on either engine")


def _check_workload(point: ResolvedPoint, wl: Any, where: str) -> None:
    """A job's workload (at ``where``, e.g. ``jobs[1].workload``) and the stop rule as merlin's
    offered_load endpoint can reproduce them."""
    machine = point.machine.machine
    if wl.name != "synthetic":
        raise Refusal(f"{where}.kind", f"workload {wl.name!r}: merlin endpoints generate "
                      "their own traffic and none replays an explicit message list (rank-program "
                      "workloads pingpong, allreduce, halo3d map to ember motifs)",
                      document="experiment")
    if wl.params.pattern.kind != "uniform" or wl.params.pattern.params != type(
            wl.params.pattern.params)():
        raise Refusal(f"{where}.pattern", f"pattern {wl.params.pattern.kind!r}: this adapter "
                      "maps only the default 'uniform' pattern (merlin.targetgen.uniform)",
                      document="experiment")
    if wl.params.injection.kind != "bernoulli":
        raise Refusal(f"{where}.injection", f"injection {wl.params.injection.kind!r}: "
                      "merlin.offered_load sends at fixed intervals from time 0 (packet time "
                      "/ load); this adapter maps only the default 'bernoulli' to it, with "
                      "the difference stated in the configuration's notes",
                      document="experiment")
    ms = wl.params.message_size
    if ms is not None and int(ms) != int(machine.packet_size):
        raise Refusal(f"{where}.message_size", f"message_size {int(ms)} B differs from "
                      f"packet_size {int(machine.packet_size)} B: merlin.offered_load sends "
                      "single-packet messages (its 'message_size' is the packet)",
                      document="experiment")
    if point.experiment.stop.measure is None:
        raise Refusal("stop.messages", "merlin.offered_load measures over a time window "
                      "(warmup_time, collect_time); give stop.measure instead of "
                      "stop.messages", document="experiment")


def _check_flits(flit: int, packet: int, figures: dict[str, dict[str, float]],
                 opts: SstOptions) -> None:
    field_ = "engine.flit_size" if opts.flit_size is not None else "packet_size"
    if packet % flit:
        raise Refusal("engine.flit_size", f"flit_size {flit} B does not divide packet_size "
                      f"{packet} B; merlin would round the packet to whole flits",
                      document="experiment")
    for c, f in sorted(figures.items()):
        if int(f["buffer"]) % flit or f["buffer"] != int(f["buffer"]):
            raise Refusal(f"links.{c}.buffer", f"buffer {f['buffer']:g} B is not a whole "
                          f"number of {flit} B flits ({field_}); merlin counts buffers in "
                          "flits and would round it")
    if opts.output_buf_size is not None and int(opts.output_buf_size) < packet:
        raise Refusal("engine.output_buf_size", f"output_buf_size {int(opts.output_buf_size)} "
                      f"B is smaller than a packet ({packet} B, packet_size): merlin sends a "
                      "packet only when the output buffer has room for all of it, so none "
                      "would ever leave", document="experiment")
    if opts.output_buf_size is not None and int(opts.output_buf_size) % flit:
        raise Refusal("engine.output_buf_size", f"output_buf_size {int(opts.output_buf_size)} "
                      f"B is not a whole number of {flit} B flits", document="experiment")


def _router_params(sst_net: SstNetwork, figures: dict[str, dict[str, float]], machine: Any,
                   flit: int, opts: SstOptions, routing: str) -> dict[str, Any]:
    """``merlin.hr_router`` parameters; per-class figures through merlin's port groups where the
    topology names them (dragonfly), else one value that every class must share."""
    out_buf = int(opts.output_buf_size or max(int(machine.packet_size), flit))
    fastest = max(f["bandwidth"] for f in figures.values())
    params: dict[str, Any] = {
        "flit_size": size(flit), "link_bw": rate(fastest),
        "xbar_bw": rate(fastest * opts.xbar_speedup),
        "input_latency": duration(machine.router.delay), "output_latency": "0ps",
        "output_buf_size": size(out_buf), "num_vns": 1,
    }
    if sst_net.port_groups:
        for c, f in sorted(figures.items()):
            grp = DRAGONFLY_PORT_GROUP[c]
            params[f"link_bw:{grp}"] = rate(f["bandwidth"])
            params[f"input_buf_size:{grp}"] = size(f["buffer"])
        params["input_buf_size"] = size(figures["terminal"]["buffer"])
    else:
        for attr, fmt in (("bandwidth", rate), ("buffer", size)):
            values = {c: f[attr] for c, f in figures.items()}
            first = values["terminal"]
            for c, v in sorted(values.items()):
                if v != first:
                    raise Refusal(f"links.{c}.{attr}", f"{attr} {fmt(v)} differs from the "
                                  f"terminal links' {fmt(first)}: {sst_net.topology} has no "
                                  "port groups, so hr_router applies one link_bw and one "
                                  "input_buf_size to every port")
        params["link_bw"] = rate(figures["terminal"]["bandwidth"])
        params["xbar_bw"] = rate(figures["terminal"]["bandwidth"] * opts.xbar_speedup)
        params["input_buf_size"] = size(figures["terminal"]["buffer"])
    if routing == "ugal":
        # our UGAL-L compares the bytes held downstream of each candidate port: merlin's
        # output queue length counts them only with the remote queue tracked
        params["oql_track_remote"] = "true"
    return params


def _check_ugal_bias(bias: float, flit: int) -> None:
    want = MERLIN_UGAL_BIAS_FLITS * flit
    if int(bias) != want:
        raise Refusal("routing.bias", f"merlin's ugal adds a fixed {MERLIN_UGAL_BIAS_FLITS} "
                      f"flits (= {want} B at flit_size {flit} B) to the Valiant side; ours adds "
                      f"{int(bias)} B.  Set routing.bias to {want}B, or engine.flit_size to "
                      f"bias/{MERLIN_UGAL_BIAS_FLITS}", document="experiment")


def _standing_notes(opts: SstOptions, flit: int, packet: int) -> list[str]:
    return [
        f"flit_size {flit} B ({packet // flit} flit(s) per packet); output buffer "
        f"{int(opts.output_buf_size or max(packet, flit))} B per VC (our routers have none); "
        f"crossbar at {opts.xbar_speedup:g}x the fastest link",
        "injection: merlin.offered_load sends at fixed intervals (packet time / load); ours "
        "is Bernoulli per packet slot; destinations from merlin.targetgen.uniform, seeded by "
        "endpoint id (the experiment's seed does not reach SST)",
        "host side: merlin.linkcontrol adds no delay and neither does our NIC (no firefly)",
    ]


def render(point: ResolvedPoint, net: SstNetwork, router: dict[str, Any],
           endpoint: dict[str, Any], nic: dict[str, Any], latency: dict[str, str],
           window: tuple[int, int], notes: list[str],
           jobs: list[EndpointJob] | None = None) -> str:
    """The configuration text: a header, data tables, then the loop that builds the model
    (with ``jobs``: each job's endpoints on its nodes, :mod:`.jobs`)."""
    stat = {"type": "sst.AccumulatorStatistic", "rate": "0ns",
            "startat": f"{window[0]}ps", "stopat": f"{window[1]}ps"}
    head = header(point, net, notes)
    data = {
        "ROUTER_PARAMS": router, "TOPOLOGY": net.topology, "TOPOLOGY_PARAMS": net.topo_params,
        "ROUTER_EXTRA": net.router_params, "NUM_PORTS": net.num_ports, "LATENCY": latency,
        "CABLES": net.cables, "HOSTS": net.hosts, "ENDPOINT": "merlin.offered_load",
        "ENDPOINT_PARAMS": endpoint, "NIC_PARAMS": nic, "STATS_FILE": STATS_FILE,
        "STAT_PARAMS": stat, "ROUTER_STATS": list(ROUTER_STATS), "NIC_STATS": list(NIC_STATS),
    }
    script = build_script()
    if jobs is not None:
        eps, nics, where = endpoint_tables(jobs, endpoint)
        del data["ENDPOINT_PARAMS"]
        data.update({"JOB_ENDPOINT_PARAMS": eps, "JOB_NIC_PARAMS": nics, "JOB_OF": where})
        script = build_script(JOB_HOSTS)
    body = [f"{k} = {pformat(v)}" for k, v in data.items()]
    return "\n".join(head + body + ["", script.strip(), ""])


