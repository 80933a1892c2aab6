"""QoS traffic classes at injection (``at: [router_outputs, injection]``): a NIC keeps its
waiting packets per class and the policy picks the class that sends next.

The machine: the dragonfly of ``test_qos_mechanism`` (2 routers per group, 2 nodes per
router, 3 groups), 1000 B packets, but here the NIC is the bottleneck: it sends at 1 GB/s (a
packet takes exactly 1 us to leave) and every other link runs at 4 GB/s without latency, so
nothing queues behind a NIC.  Node 2 (router 1) sends to nodes 0 and 4 (class 0, ``high``)
and 1 and 5 (class 1, ``low``): the class is the destination's parity.  The tests read each
packet's injection time off the packets table.  Static windows start at t = 0.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import yaml

from federation import hookimpl
from federation.engine.qos import NIC_WALK
from federation.errors import ConfigError
from federation.pipeline.load import load_experiment
from federation.pipeline.point import prepare
from federation.plugin.registry import FederationPlugins
from federation.plugins.qos.bandwidth_caps import BandwidthCaps
from federation.plugins.qos.strict_priority import StrictPriorityQos
from federation.plugins.qos.weighted_round_robin import WeightedRoundRobin

US = 1_000_000  # ps
PKT = 1000


def by_dst_parity(messages):  # noqa: ANN001
    return (messages.dst % 2).astype(np.int16)


class DstCaps(BandwidthCaps):
    name = "dst_caps"
    traffic_class = staticmethod(by_dst_parity)  # type: ignore[assignment]


class DstStrict(StrictPriorityQos):
    name = "dst_strict"
    traffic_class = staticmethod(by_dst_parity)  # type: ignore[assignment]


class DstWrr(WeightedRoundRobin):
    name = "dst_wrr"
    traffic_class = staticmethod(by_dst_parity)  # type: ignore[assignment]


class AllLow(StrictPriorityQos):
    """Strict priority; every message in the low class unless its workload names one, so a
    rank program's packets (``classes: {workload: high}``) and the background's compete at
    each NIC."""

    name = "background_low"

    def traffic_class(self, messages):  # noqa: ANN001, ANN201
        return np.ones(messages.count, dtype=np.int16)


def by_src_low_dst_high(messages):  # noqa: ANN001
    """Nodes 0-3 send in their own parity's class; the others by the destination's."""
    cls = np.where(messages.src < 4, messages.src % 2, messages.dst % 2)
    return cls.astype(np.int16)


class MixedCaps(BandwidthCaps):
    name = "mixed_caps"
    traffic_class = staticmethod(by_src_low_dst_high)  # type: ignore[assignment]


class MixedWrr(WeightedRoundRobin):
    name = "mixed_wrr"
    traffic_class = staticmethod(by_src_low_dst_high)  # type: ignore[assignment]


class PhaseWrr(WeightedRoundRobin):
    """Every message in the class of its creation time's 100 us phase: at load 0.3 a chunk
    spans about 35 us, so at a phase's edge a NIC may hold one class in a chunk and the other
    in the next, its one-class sends of both settled at the load between them."""

    name = "phase_wrr"

    def traffic_class(self, messages):  # noqa: ANN001, ANN201
        return (1 - (messages.time_ps // 100_000_000) % 2).astype(np.int16)  # 1 first


class AllLowWrr(WeightedRoundRobin):
    """:class:`AllLow` under weighted round-robin: a NIC's background sends take the
    one-class path until a program's packet waits too, then its deficits (settled lazily)
    pick."""

    name = "background_low_wrr"
    traffic_class = AllLow.traffic_class


@hookimpl
def federation_register_qos(register) -> None:  # noqa: ANN001
    for cls in (DstCaps, DstStrict, DstWrr, AllLow, MixedCaps, MixedWrr, AllLowWrr, PhaseWrr):
        register(cls)


def plugins() -> FederationPlugins:
    module = types.ModuleType("qos_dst")
    module.federation_register_qos = federation_register_qos
    pm = FederationPlugins(load_entrypoints=False)
    pm.add(module, "qos_dst", "tests")
    return pm


def experiment(tmp_path, qos: dict, messages: list[dict], **top) -> object:
    fast = {"bandwidth": "4GB/s", "latency": "0ns"}
    doc = {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 2, "h": 1},
                       "links": {"terminal": fast, "local": fast, "global": fast},
                       "nic": {"bandwidth": "1GB/s"},
                       "router": {"vcs": 4, "delay": "0ns"}, "packet_size": PKT,
                       "qos": qos},
           "routing": {"algorithm": "minimal"},
           "workload": {"kind": "messages", "messages": messages},
           "stop": {"warmup": "0ns", "measure": "500us"}, **top}
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_experiment(path, plugins=plugins()).points[0]


def run(tmp_path, qos: dict, messages: list[dict]) -> dict:
    """The packets table's columns (NumPy arrays) of the run, with ``t``: each packet's
    injection time in whole us (asserted whole)."""
    point = experiment(tmp_path, qos, messages)
    raw = point.engine.run(prepare(point).job)
    p = {k: np.asarray(v) for k, v in raw.packets.packets.items()}
    assert (p["injected_ps"] % US == 0).all()
    p["t"] = p["injected_ps"] // US
    p["cls"] = p["dst"] % 2
    return p


def caps(c0: float, c1: float, at: list[str] | None = None) -> dict:
    q = {"kind": "dst_caps", "window": "10us",
         "classes": [{"name": "high", "cap": c0}, {"name": "low", "cap": c1}]}
    if at is not None:
        q["at"] = at
    return q


def per_window(times: np.ndarray, w: int, n: int) -> list[int]:
    return [int(((times >= k * w) & (times < (k + 1) * w)).sum()) for k in range(n)]


def msg(dst: int, n: int, at: str = "0ns") -> dict:
    return {"at": at, "src": 2, "dst": dst, "size": n * PKT}


def test_one_nic_shares_its_link_07_03_over_whole_windows(tmp_path):
    # both classes saturate the NIC from t = 0 (the low class's message is created first)
    p = run(tmp_path, caps(0.7, 0.3), [msg(1, 40), msg(0, 40, "1ps")])
    hi = np.sort(p["t"][p["cls"] == 0])
    lo = np.sort(p["t"][p["cls"] == 1])
    # window 0: the low class alone at t = 0 (the high one is created 1 ps later), then the
    # high class 7 slots (its cap), then the low class the 2 left; then 7 / 3 per window
    assert per_window(hi, 10, 5) == [7, 7, 7, 7, 7]
    assert per_window(lo, 10, 5) == [3, 3, 3, 3, 3]
    assert lo[0] == 0 and list(hi[:7]) == [1, 2, 3, 4, 5, 6, 7]
    assert sorted(np.concatenate([hi, lo]).tolist()) == list(range(80))  # work-conserving


def test_class_below_its_cap_leaves_the_rest(tmp_path):
    # the high class offers one packet every 5 us (0.2 of the link, below its 0.7): the low
    # class, over its 0.3, takes every other slot
    high = [msg(0, 1, f"{5 * k}us") for k in range(10)]
    p = run(tmp_path, caps(0.7, 0.3), [msg(1, 40)] + high)
    hi = np.sort(p["t"][p["cls"] == 0])
    lo = np.sort(p["t"][p["cls"] == 1])
    assert hi.tolist() == [5 * k for k in range(10)]  # served as it is created
    assert per_window(lo, 10, 4) == [8, 8, 8, 8]
    assert sorted(np.concatenate([hi, lo]).tolist()) == list(range(50))


def test_creation_order_within_a_class(tmp_path):
    # class 0: to node 0 then node 4; class 1: to node 5 then node 1 (created later each)
    p = run(tmp_path, caps(0.5, 0.5), [msg(0, 6), msg(5, 6, "1ps"), msg(4, 6, "2ps"),
                                       msg(1, 6, "3ps")])
    for c, first, second in ((0, 0, 4), (1, 5, 1)):
        k = p["cls"] == c
        order = p["dst"][k][np.argsort(p["t"][k], kind="stable")]
        assert order.tolist() == [first] * 6 + [second] * 6
        ids = p["packet"][k][np.argsort(p["t"][k], kind="stable")]
        assert (np.diff(ids) > 0).all()
    assert sorted(p["t"].tolist()) == list(range(24))


def test_strict_priority_at_injection(tmp_path):
    p = run(tmp_path, {"kind": "dst_strict", "classes": [{"name": "high"}, {"name": "low"}]},
            [msg(1, 5), msg(0, 5, "1ps")])
    # the low class's first packet leaves at 0 (alone then); then the high class's five
    assert sorted(p["t"][p["cls"] == 0].tolist()) == [1, 2, 3, 4, 5]
    assert sorted(p["t"][p["cls"] == 1].tolist()) == [0, 6, 7, 8, 9]


def test_weighted_round_robin_at_injection(tmp_path):
    wrr = {"kind": "dst_wrr", "classes": [{"name": "a", "weight": 3}, {"name": "b", "weight": 1}]}
    p = run(tmp_path, wrr, [msg(1, 40), msg(0, 40, "1ps")])
    order = p["cls"][np.argsort(p["t"])]
    # the low class alone at t = 0, then deficit round-robin (768 B and 256 B per round for
    # 1000 B packets): three of class 0 per one of class 1
    assert order[:36].tolist() == [1, 0, 0, 0] * 9
    assert sorted(p["t"].tolist()) == list(range(80))


def test_router_outputs_only_keeps_one_stream_in_creation_order(tmp_path):
    p = run(tmp_path, caps(0.7, 0.3, at=["router_outputs"]), [msg(1, 5), msg(0, 5, "1ps")])
    assert sorted(p["t"][p["cls"] == 1].tolist()) == [0, 1, 2, 3, 4]
    assert sorted(p["t"][p["cls"] == 0].tolist()) == [5, 6, 7, 8, 9]


def test_at_must_include_router_outputs(tmp_path):
    with pytest.raises(ConfigError) as exc:
        experiment(tmp_path, caps(0.7, 0.3, at=["injection"]), [])
    assert "machine.qos.at" in str(exc.value) and "router_outputs" in str(exc.value)
    with pytest.raises(ConfigError) as exc:
        experiment(tmp_path, caps(0.7, 0.3, at=["injection", "injection"]), [])
    assert "machine.qos.at" in str(exc.value) and "twice" in str(exc.value)


def test_program_packets_go_before_a_low_background_at_the_nic(tmp_path):
    def end(at: list[str]) -> int:
        qos = {"kind": "background_low", "at": at, "classes": [{"name": "high"}, {"name": "low"}]}
        point = experiment(tmp_path, qos, [], background={"kind": "synthetic", "load": 0.9},
                           workload={"kind": "collective", "op": "allreduce", "ranks": 4,
                                     "size": "32KiB", "iterations": 2},
                           classes={"workload": "high"})
        raw = point.engine.run(prepare(point).job)
        assert raw.programs is not None
        return raw.end_ps

    before, after = end(["router_outputs"]), end(["router_outputs", "injection"])
    # the programs finish; their packets no longer queue behind the background at their NICs
    assert 0 < after < before


def test_classes_reorder_across_chunk_loads_and_every_packet_leaves_once(tmp_path,
                                                                        monkeypatch):
    """Poisson open-loop traffic near the NICs' bandwidth in chunks of 128 packets: NICs hold a
    backlog of both classes when chunks load (the feed is rebuilt from what is unsent, the
    class pointers restart).  Every packet leaves once and is delivered; within a (node,
    class) packets leave in creation order; across classes they do not."""
    monkeypatch.setattr("federation.pipeline.messages.CHUNK_PACKETS", 128)
    point = experiment(tmp_path, caps(0.5, 0.5), [],
                       workload={"kind": "synthetic", "load": 0.95,
                                 "injection": "poisson"},
                       stop={"warmup": "0ns", "measure": "200us"})
    raw = point.engine.run(prepare(point).job)
    p = {k: np.asarray(v) for k, v in raw.packets.packets.items()}
    assert p["packet"].size > 10 * 128
    assert (p["delivered_ps"] >= 0).all() and np.unique(p["packet"]).size == p["packet"].size
    cls = p["dst"] % 2
    reordered = 0
    for node in np.unique(p["src"]):
        k = p["src"] == node
        order = np.lexsort((p["packet"][k], p["injected_ps"][k]))
        ids, c = p["packet"][k][order], cls[k][order]
        for x in (0, 1):
            assert (np.diff(ids[c == x]) > 0).all()
        reordered += int((np.diff(ids) < 0).sum())
    assert reordered > 0
    again = point.engine.run(prepare(point).job).packets.packets  # deterministic
    assert np.array_equal(np.asarray(again["injected_ps"]), p["injected_ps"])


def test_a_loaded_feed_points_each_class_at_its_first_slot_on_its_node():
    """After a chunk load every (node, class) pointer stands at the node's first slot of
    that class, or at the node's end when the node has none, and each slot links to its
    node's next slot of its class: no NIC scans over another class's packets."""
    from federation.engine.qos import CLASS_MASK, K_STRICT, LINK_SHIFT, new_state, reset_nic_ptrs

    st = new_state(K_STRICT, n_ports=4, n_classes=3, n_nodes=3)
    nic_first = np.array([0, 4, 4, 7])  # node 0: slots 0-3, node 1: none, node 2: 4-6
    cls = np.array([1, 1, 0, 1, 2, 2, 1])
    reset_nic_ptrs(st, nic_first, cls)
    assert st.nic_ptr.reshape(3, 3).tolist() == [[2, 0, 4], [4, 4, 4], [7, 6, 4]]
    # each slot's class word keeps its class and links its node's next slot of that class
    assert (cls & CLASS_MASK).tolist() == [1, 1, 0, 1, 2, 2, 1]
    assert (cls >> LINK_SHIFT).tolist() == [1, 3, 4, 4, 5, 7, 7]  # else the node's end
    assert st.nic_one.tolist() == [-1, -1, -1]  # two classes, none, two classes
    one = np.array([1, 1, 2, 2, 2])
    reset_nic_ptrs(st, np.array([0, 2, 2, 5]), one)
    assert st.nic_one.tolist() == [1, -1, 2]  # one class: the shorter path (inject_one)
    assert (one >> LINK_SHIFT).tolist() == [1, 2, 3, 4, 5]
    reset_nic_ptrs(st, np.array([0, 2, 2, 5]), one)  # a reload reads the classes under links
    assert (one & CLASS_MASK).tolist() == [1, 1, 2, 2, 2]


@pytest.mark.parametrize("qos", [
    {"kind": "mixed_caps", "window": "5us",
     "classes": [{"name": "high", "cap": 0.3}, {"name": "low", "cap": 0.3}]},
    {"kind": "mixed_caps", "window": "5us", "window_kind": "sliding",
     "classes": [{"name": "high", "cap": 0.6}, {"name": "low", "cap": 0.2}]},
    {"kind": "mixed_wrr", "classes": [{"name": "high", "weight": 3}, {"name": "low", "weight": 1}]},
    {"kind": "background_low", "classes": [{"name": "high"}, {"name": "low"}]},
    {"kind": "background_low_wrr",
     "classes": [{"name": "high", "weight": 1}, {"name": "low", "weight": 2}]},
    {"kind": "phase_wrr", "classes": [{"name": "high", "weight": 1}, {"name": "low", "weight": 3}]},
], ids=["caps_static", "caps_sliding", "wrr", "programs", "programs_wrr", "wrr_phases"])
def test_one_class_nics_take_the_short_path_to_the_same_packets(tmp_path, monkeypatch, qos):
    """NICs whose waiting packets are all of one class skip the class walk (``nic_one``,
    :func:`federation.engine.loop.inject_one`).  Here nodes 0-3 send one class each
    and the others two (so a chunk of 128 packets may leave a node with one or two): every
    packet leaves and arrives at exactly the time it does when every NIC walks its classes
    (``NIC_WALK``), and when every NIC is marked as of several classes (then a NIC whose
    oldest unsent packet alone is due sends it without the walk, :func:`inject_one` again),
    with the same per-class inactive time at every port and the same policy state at the end
    (weighted round-robin settles a one-class NIC's deficits lazily: at its next pick by the
    policy, at each load, at the end).  Buffers of two packets and links no faster than the
    NICs: injection waits for credit too.  (Dropping the settle at a pick fails
    ``programs_wrr``; dropping the one at loads changed no answer here: a class switch
    with one candidate resets a NIC's deficits, so a misordered settle is forgotten at the
    next switch unless two classes compete before it.)"""
    monkeypatch.setattr("federation.pipeline.messages.CHUNK_PACKETS", 128)
    top: dict = {"workload": {"kind": "synthetic", "load": 0.9, "injection": "poisson"},
                 "stop": {"warmup": "0ns", "measure": "60us"}}
    if qos["kind"] == "phase_wrr":
        top = {"workload": {"kind": "synthetic", "load": 0.3, "injection": "poisson"},
               "stop": {"warmup": "0ns", "measure": "300us"}}
    if qos["kind"].startswith("background_low"):
        top = {"background": {"kind": "synthetic", "load": 0.9},
               "workload": {"kind": "collective", "op": "allreduce", "ranks": 4,
                            "size": "32KiB", "iterations": 2},
               "classes": {"workload": "high"}}
    doc = {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 2, "h": 1},
                       "links": {k: {"bandwidth": "1GB/s", "latency": "10ns", "buffer": 2 * PKT}
                                 for k in ("terminal", "local", "global")},
                       "nic": {"bandwidth": "1GB/s"},
                       "router": {"vcs": 4, "delay": "0ns"}, "packet_size": PKT, "qos": qos},
           "routing": {"algorithm": "minimal"}, "stop": {"warmup": "0ns", "measure": "500us"},
           **top}
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(doc))
    point = load_experiment(path, plugins=plugins()).points[0]
    took = []

    def counted(st, nic_first, cls):  # noqa: ANN001, ANN202
        reset(st, nic_first, cls)
        took.append(int((st.nic_one >= 0).sum()))

    def walk_all(st, nic_first, cls, mark=NIC_WALK):  # noqa: ANN001, ANN202
        reset(st, nic_first, cls)
        st.nic_one[:] = mark

    import federation.engine.feed as feed
    import federation.engine.native as native

    finals = []  # each run's QoS state as it ends (weighted round-robin: settled)

    def final(st, end):  # noqa: ANN001, ANN202
        finals.append(st)
        return inactive(st, end)

    settled = []  # per load: NICs whose one-class sends (weighted round-robin) it settles

    def settle(st, class_bytes, nic_port):  # noqa: ANN001, ANN202
        C = int(st.n_classes)
        settled.append(int((class_bytes.reshape(-1, C)[nic_port[:st.nic_one.size]]
                            > st.wsnap.reshape(-1, C)).any(axis=1).sum()))
        settle_nics(st, class_bytes, nic_port)

    reset, inactive, settle_nics = feed.reset_nic_ptrs, native.inactive_time, feed.settle_nics
    monkeypatch.setattr(native, "inactive_time", final)
    monkeypatch.setattr(feed, "settle_nics", settle)
    monkeypatch.setattr(feed, "reset_nic_ptrs", counted)
    short = point.engine.run(prepare(point).job)
    monkeypatch.setattr(feed, "reset_nic_ptrs", walk_all)
    loads = len(settled)
    walked = point.engine.run(prepare(point).job)
    walked_loads = len(settled)
    # every node marked as of several classes: the oldest slot alone due goes without the walk
    monkeypatch.setattr(feed, "reset_nic_ptrs", lambda *a: walk_all(*a, mark=-1))
    mixed = point.engine.run(prepare(point).job)
    assert max(took) > 0  # some NICs on the short path
    if qos["kind"] == "phase_wrr":  # NICs with one class in a chunk, the other in the next
        assert sum(settled[:loads]) > 12 and not any(settled[loads:walked_loads])  # walked
        assert sum(settled[walked_loads:]) > 12  # lone sends at NICs of several classes
    assert len(took) > 1 or qos["kind"].startswith("background_low")  # NICs changed path
    a, b, m = short.packets.packets, walked.packets.packets, mixed.packets.packets
    assert len(a["packet"]) > 200
    for col in ("packet", "injected_ps", "delivered_ps", "class"):
        assert np.array_equal(np.asarray(a[col]), np.asarray(b[col])), col
        assert np.array_equal(np.asarray(m[col]), np.asarray(b[col])), col
    # packets still in the feed at the end report their class, not its word's link
    assert set(np.unique(np.asarray(a["class"])).tolist()) <= {0, 1}
    assert np.array_equal(short.port_class_inactive, walked.port_class_inactive)
    assert np.array_equal(mixed.port_class_inactive, walked.port_class_inactive)
    assert short.end_ps == walked.end_ps == mixed.end_ps
    # every port's policy state too: weighted round-robin's lazily settled NIC deficits
    for other in (finals[0], finals[2]):
        assert np.array_equal(other.deficit, finals[1].deficit)
        assert np.array_equal(other.since, finals[1].since)
