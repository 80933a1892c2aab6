"""Router fields merlin's hr_router does not model are refused on engine sst, naming the field.

``switching: cut_through``, ``credit_delay``, ``injection_vc: random``, a non-default
``arbiter`` and ``model: booksim_iq`` (with its ``speedup``) were written into a configuration
byte-identical to the plain machine's, and the header's differences did not mention them: the
SST run silently ran merlin's own router.  Each is now refused by :func:`build_config` (so
``federation sst config``, ``run`` with engine sst and ``validate`` refuse it alike), exit 2,
one line, nothing written; every field at its default still passes, as a resolved document
writes it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import one_error, run_cli

from federation.errors import ConfigError

DRAGONFLY = {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}
OPEN = {"kind": "synthetic", "pattern": "uniform", "load": 0.3}
CLOSED = {"kind": "pingpong", "sizes": ["8B"], "iterations": 1, "nodes": [0, 71]}


def experiment(tmp_path: Path, router: dict, workload: dict = OPEN) -> str:
    doc = {"schema_version": 1, "machine": {"topology": DRAGONFLY, "router": router},
           "engine": {"kind": "sst"}, "workload": workload,
           "stop": {"warmup": "1us", "measure": "5us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    return "e.yaml"


def config_text(tmp_path: Path, router: dict, workload: dict = OPEN) -> str:
    from federation.adapters.sst import build_config
    from federation.pipeline.build import build_network
    from federation.pipeline.load import load_experiment

    p = load_experiment(tmp_path / experiment(tmp_path, router, workload)).points[0]
    return build_config(p, build_network(p), p.engine.params).text


REFUSED = [
    ({"switching": "cut_through"}, "machine.router.switching",
     "router.switching 'cut_through' is not mapped to merlin: hr_router has no switching "
     "choice: it moves a packet in flits of engine.flit_size (by default one flit, the whole "
     "packet, as our store and forward); no setting of it is virtual cut-through; use "
     "'store_and_forward' with engine sst"),
    ({"credit_delay": "100ns"}, "machine.router.credit_delay",
     "router.credit_delay 100000ps is not mapped to merlin: hr_router has no parameter for a "
     "credit delay of its own (its input_latency, our router.delay, already delays every "
     "credit that reaches a router: see the header's note); use 0 with engine sst"),
    ({"injection_vc": "random"}, "machine.router.injection_vc",
     "router.injection_vc 'random' is not mapped to merlin: merlin.linkcontrol injects every "
     "packet on its virtual network's first VC (our 'zero'); nothing draws the VC per packet; "
     "use 'zero' with engine sst"),
    ({"arbiter": {"kind": "round_robin"}}, "machine.router.arbiter",
     "router.arbiter 'round_robin' is not mapped to merlin: hr_router's crossbar arbitration "
     "is its own (xbar_arb, merlin.xbar_arb_lru; merlin.xbar_arb_age and merlin.xbar_arb_rr "
     "exist but have not been checked against ours) and its output VCs are served "
     "round-robin, whatever router.arbiter says; use the default 'oldest_first' with engine "
     "sst (its difference is stated in the header)"),
    ({"model": "booksim_iq", "speedup": 2}, "machine.router.model",
     "router.model 'booksim_iq' is not mapped to merlin: hr_router is merlin's one router "
     "(input buffers, a crossbar clocked at xbar_bw / flit_size, output buffers); it has no "
     "clocked input-queued model with separable allocators and an internal speedup like "
     "BookSim's; use 'default' with engine sst"),
]


@pytest.mark.parametrize(("router", "path", "message"), REFUSED)
def test_sst_config_refuses_a_router_field_merlin_does_not_model(tmp_path, router, path,
                                                                 message):
    e = experiment(tmp_path, router)
    want = f"error: e.yaml: {path}: engine sst: {message}"
    assert one_error(run_cli("sst", "config", e, "--out", "cfg", cwd=tmp_path)) == want
    assert not (tmp_path / "cfg").exists()


@pytest.mark.parametrize(("router", "path", "message"), REFUSED[:2])
def test_validate_and_rank_programs_refuse_them_too(tmp_path, router, path, message):
    """The same code path (``build_config``, the engine's check): ``validate`` refuses, and so
    does a closed-loop (ember) point."""
    e = experiment(tmp_path, router)
    assert one_error(run_cli("validate", e, cwd=tmp_path)) == \
        f"error: e.yaml: {path}: engine sst: {message}"
    with pytest.raises(ConfigError) as exc:
        config_text(tmp_path, router, CLOSED)
    assert (exc.value.path, exc.value.message) == (path, f"engine sst: {message}")


def test_every_router_field_at_its_default_passes_and_the_header_says_the_difference(
        tmp_path):
    plain = config_text(tmp_path, {})
    spelled = config_text(tmp_path, {
        "delay": "50ns", "vcs": 3, "injection_vc": "spread", "arbiter": {"kind": "oldest_first"},
        "switching": "store_and_forward", "model": "default", "credit_delay": "0ns"})
    assert spelled == plain
    assert ("#  - arbitration: hr_router allocates its crossbar least-recently-used first "
            "(merlin.xbar_arb_lru) and serves output VCs round-robin; ours sends the oldest "
            "waiting packet (router.arbiter: oldest_first); merlin.linkcontrol injects every "
            "packet on its VN's first VC (as router.injection_vc: zero), ours spreads them "
            "over the VCs (spread)\n") in plain
    zero = config_text(tmp_path, {"injection_vc": "zero"})
    assert "ours spreads" not in zero and "(router.arbiter: oldest_first)\n" in zero
    assert zero.split("import sst", 1)[1] == plain.split("import sst", 1)[1]


@pytest.mark.parametrize(("routing", "field", "default", "message"), [
    ({"algorithm": "ugal", "decide": "injection", "bias": "25600B"}, "decide", "source_router",
     "routing 'ugal' decide 'injection' is not mapped to merlin: its ugal takes no such "
     "parameter and chooses paths, VCs and intermediates its own way; use the default "
     "'source_router' with engine sst"),
    ({"algorithm": "minimal", "vc_step": "on"}, "vc_step", "after",
     "routing 'minimal' vc_step 'on' is not mapped to merlin: its minimal takes no such "
     "parameter and chooses paths, VCs and intermediates its own way; use the default 'after' "
     "with engine sst"),
])
def test_a_routing_parameter_merlin_does_not_take_is_refused(tmp_path, routing, field, default,
                                                            message):
    """These were dropped from the configuration without a word, as the router fields were;
    at their defaults they pass."""
    doc = yaml.safe_load((tmp_path / experiment(tmp_path, {})).read_text())
    doc["routing"] = routing
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    line = one_error(run_cli("sst", "config", "e.yaml", "--out", "cfg", cwd=tmp_path))
    assert line == f"error: e.yaml: routing.{field}: engine sst: {message}"
    assert not (tmp_path / "cfg").exists()
    doc["routing"] = {**routing, field: default}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    r = run_cli("sst", "config", "e.yaml", "--out", "cfg", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_an_injection_process_other_than_bernoulli_is_refused_saying_what_merlin_does(
        tmp_path):
    """merlin.offered_load sends at fixed intervals from time 0 (``next_time +=
    send_interval``); the refusal said "its own Bernoulli process" while the header said fixed
    intervals."""
    e = experiment(tmp_path, {}, {**OPEN, "injection": {"kind": "periodic"}})
    assert one_error(run_cli("sst", "config", e, "--out", "cfg", cwd=tmp_path)) == (
        "error: e.yaml: workload.injection: engine sst: injection 'periodic': "
        "merlin.offered_load sends at fixed intervals from time 0 (packet time / load); this "
        "adapter maps only the default 'bernoulli' to it, with the difference stated in the "
        "configuration's notes")
    assert not (tmp_path / "cfg").exists()


def test_a_nic_slower_than_its_terminal_link_is_refused(tmp_path):
    """merlin's two link ends settle on the lower bandwidth in both directions, so the
    router-to-node direction ran at the NIC's figure too: every latency on such a machine
    was skewed (a 512 B ping-pong about 15 % above ours), silently."""
    doc = {"schema_version": 1, "machine": {"topology": DRAGONFLY,
                                            "nic": {"bandwidth": "2GiB/s"}},
           "engine": {"kind": "sst"}, "workload": OPEN,
           "stop": {"warmup": "1us", "measure": "5us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    line = one_error(run_cli("sst", "config", "e.yaml", "--out", "c", cwd=tmp_path))
    assert line.startswith("error: e.yaml: machine.nic.bandwidth: engine sst: nic.bandwidth "
                           "2GiB/s differs from the terminal links' 5.25GiB/s: merlin's two "
                           "ends of a link settle on the lower bandwidth in both directions")
    assert not (tmp_path / "c").exists()


def test_the_header_says_merlin_delays_credits_by_the_router_delay(tmp_path):
    assert "#  - credits: hr_router's input_latency (our router.delay) delays everything " \
        "that arrives on a router's links, credits too" in config_text(tmp_path, {})


def test_valiant_on_two_groups_is_said_minimal(tmp_path):
    """merlin's dragonfly runs valiant as minimal with two groups; the header said it detours
    intra-group traffic through a random router."""
    doc = {"schema_version": 1,
           "machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 2, "h": 1, "g": 2}},
           "engine": {"kind": "sst"}, "routing": {"algorithm": "valiant"}, "workload": OPEN,
           "stop": {"warmup": "1us", "measure": "5us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    r = run_cli("sst", "config", "e.yaml", "--out", "c", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "c" / "config-0.py").read_text()
    assert "merlin's dragonfly runs valiant as minimal with 2 groups or fewer" in text
    assert "also sends intra-group traffic" not in text
