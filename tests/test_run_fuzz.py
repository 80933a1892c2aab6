"""Property-based runs: random small machines and experiments, including unit slips, either run
with sane results or are refused with the project's own error naming the file.

Sane results: every packet is delivered, no latency is below the packet's zero-load bound (the
store-and-forward time of its own hop count on the fastest links), and no more bytes are
accepted in the window than were created before its end.  Bounded and seeded; set
``FEDERATION_FUZZ_EXAMPLES`` for a longer search.
"""

from __future__ import annotations

import os

import yaml
from conftest import zero_load_bound_ps
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from federation.errors import ConfigError, FederationError
from federation.models.units import PS_PER_S

EXAMPLES = int(os.environ.get("FEDERATION_FUZZ_EXAMPLES", "40"))

TOPOLOGIES = st.one_of(
    st.builds(lambda p, a, h: {"kind": "dragonfly", "p": p, "a": a, "h": h},
              st.integers(1, 2), st.integers(1, 4), st.integers(1, 2)),
    st.builds(lambda dims: {"kind": "torus", "dims": dims},
              st.lists(st.integers(2, 4), min_size=1, max_size=3)),
    st.builds(lambda n: {"kind": "hypercube", "n": n}, st.integers(1, 4)),
    st.builds(lambda n: {"kind": "fattree", "k": 2, "n": n}, st.integers(1, 3)),
    st.builds(lambda k: {"kind": "circulant", "preset": {"k": k}}, st.integers(2, 4)),
    st.just({"kind": "megafly", "leaves": 2, "spines": 2, "nodes_per_leaf": 2,
             "global_links_per_spine": 1}),
)
#: figures as users write them, slips included (a plain number is seconds or bytes per second)
RATES = st.sampled_from(["5.25GiB/s", "100Gb/s", "1GB/s", 5e9, "25GiB/s", 1e3, "3B/s"])
LATENCIES = st.sampled_from(["10ns", "100ns", "1us", 0, 1e-7, 100, "1e99ns", "0.2s"])
DELAYS = st.sampled_from(["50ns", "1ns", 0, 65, "1e18ps"])
SIZES = st.sampled_from([512, 64, 1, 4096, "2KiB", 100])


@st.composite
def experiments(draw: st.DrawFn) -> dict:
    topo = draw(TOPOLOGIES)
    links = {cls: {"bandwidth": draw(RATES), "latency": draw(LATENCIES)}
             for cls in draw(st.lists(st.sampled_from(["terminal"]), max_size=1))}
    machine = {"topology": topo, "links": links,
               "router": {"delay": draw(DELAYS), "vcs": draw(st.integers(1, 6))},
               "packet_size": draw(SIZES)}
    if draw(st.booleans()):
        workload = {"kind": "synthetic", "load": draw(st.sampled_from([0.05, 0.3, 0.9, 1e-9])),
                    "pattern": draw(st.sampled_from(["uniform", "group_shift"]))}
    else:
        msgs = draw(st.lists(st.fixed_dictionaries({
            "at": st.sampled_from([0, "100ns", "1us", "3us"]),
            "src": st.integers(0, 3), "dst": st.integers(0, 3),
            "size": st.sampled_from([1, 512, 5000, "64KiB"])}), min_size=1, max_size=6))
        workload = {"kind": "messages", "messages": msgs}
    return {"machine": machine,
            "routing": {"algorithm": draw(st.sampled_from(["minimal", "valiant", "ugal"]))},
            "workload": workload, "seed": draw(st.integers(0, 3)),
            "stop": {"warmup": draw(st.sampled_from([0, "200ns", "1us"])),
                     "measure": draw(st.sampled_from(["500ns", "2us", 5e-6]))}}


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(doc=experiments())
def test_runs_are_sane_or_refused(tmp_path, doc):
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import prepare
    from federation.pipeline.summary import summarize

    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(doc))
    try:
        point = load_experiment(path).points[0]
        prep = prepare(point)
        raw = point.engine.run(prep.job)
    except ConfigError as exc:
        assert str(exc).startswith(str(path)), str(exc)
        return
    except FederationError as exc:  # e.g. a topology that cannot be built from these figures
        assert str(exc), exc
        return
    summary, packets, _ = summarize(prep, raw)
    assert summary.packets_delivered == summary.packets_generated
    lat = packets["delivered_ps"] - packets["created_ps"]
    assert (lat >= zero_load_bound_ps(prep, packets)).all()
    w0, w1 = prep.window
    created_before_end = packets["size"][packets["created_ps"] < w1].sum()
    span = (w1 - w0) / PS_PER_S * prep.job.nic_bandwidth * prep.network.n_nodes
    assert summary.accepted_load * span <= created_before_end * (1 + 1e-9)
    for stats in (summary.latency_ns, summary.network_latency_ns):
        assert stats.mean is None or stats.mean >= 0


@st.composite
def one_class_runs(draw: st.DrawFn) -> dict:
    """Two symmetric classes (equal weights, equal caps) on machines whose minimal routing needs
    2 VCs per class, fast or usual terminal links, all traffic in one class."""
    kind = draw(st.sampled_from(["strict_priority", "weighted_round_robin", "bandwidth_caps"]))
    extra = {"weighted_round_robin": {"weight": 1}, "bandwidth_caps": {"cap": 0.5}}.get(kind, {})
    # at router outputs only: the NIC sends in creation order, as without classes (the
    # class walk at injection has its own tests, test_qos_injection.py)
    qos = {"kind": kind, "classes": [{"name": "high", **extra}, {"name": "low", **extra}],
           "at": ["router_outputs"]}
    if kind == "bandwidth_caps":
        # caps 0.5 hold a 512 B packet at 4.7 GiB/s (a dragonfly's global links) from 202.712 ns
        # on (shorter windows are refused)
        qos["window"] = draw(st.sampled_from(["250ns", "1us"]))
    topo = draw(st.sampled_from([{"kind": "circulant", "n": 4, "jumps": [1]},
                                 {"kind": "dragonfly", "p": 2, "a": 2, "h": 1},
                                 {"kind": "torus", "dims": [4]}]))
    return {"machine": {"topology": topo, "router": {"vcs": 4}, "qos": qos,
                        "links": {"terminal": {"bandwidth": draw(st.sampled_from(
                            ["5.25GiB/s", "25GiB/s", "50GB/s"]))}}},
            "routing": {"algorithm": "minimal"},
            "workload": {"kind": "synthetic", "load": draw(st.sampled_from([0.1, 0.5, 1.0])),
                         "pattern": "uniform"},
            "seed": draw(st.integers(0, 3)), "stop": {"warmup": "0ns", "measure": "1us"}}


@settings(max_examples=max(4, EXAMPLES // 4), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(doc=one_class_runs())
def test_one_class_in_either_of_two_alike_classes_is_the_same_run(tmp_path, doc):
    """Metamorphic: with two classes alike, sending everything in ``low`` (class 1, VCs 2-3)
    must give exactly the run of ``high`` (class 0, VCs 0-1), every packet delivered.  A NIC
    whose class-1 head waited for credit once wrote past its port's rows (fast terminals)."""
    from conftest import simulate

    runs = []
    for cls in ("high", "low"):
        _, _, summary, packets, _ = simulate(tmp_path, {**doc, "classes": {"workload": cls}},
                                             name=f"{cls}.yaml")
        assert summary.packets_delivered == summary.packets_generated
        runs.append(packets)
    for column in ("packet", "src", "dst", "created_ps", "delivered_ps", "hops"):
        assert (runs[0][column] == runs[1][column]).all(), column
