"""A sliding window's rings of sends (``bandwidth_caps``, ``window_kind: sliding``) are in the
memory estimate before the run: their exact bound (:mod:`federation.engine.qos_rings`), the
estimate's term, the engine never growing past it, and the refusal of a window whose rings
would pass ``--max-memory`` (exit 2, one line naming the file and ``qos.window``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import yaml

from federation.cli import main
from federation.engine import qos as Q
from federation.engine.qos_rings import RING_SLOT_BYTES, grow_rings, ring_entries
from federation.pipeline.bounds import check_machine_memory
from federation.pipeline.load import load_experiment
from federation.pipeline.point import prepare

US = 1_000_000  # ps
PKT = 1000
#: the small dragonfly (p 2, a 2, h 1): 12 nodes, 6 cables (3 local, 3 global), so 2 x 12 +
#: 2 x 6 = 36 ports, every one with a ring per class
PORTS = 36


def machine(window: str = "100us", kind: str = "sliding",
            at: tuple[str, ...] = ("router_outputs", "injection"),
            caps: tuple[float, float] = (0.4, 0.6)) -> dict:
    """Links of 1 GB/s (1000 ps per byte), NICs of 2 GB/s, packets of 1000 B."""
    link = {"bandwidth": "1GB/s", "latency": "0ns"}
    return {"topology": {"kind": "dragonfly", "p": 2, "a": 2, "h": 1},
            "links": {"terminal": {**link, "latency": "500ns"}, "local": link, "global": link},
            "nic": {"bandwidth": "2GB/s"}, "router": {"vcs": 4, "delay": "0ns"},
            "packet_size": PKT,
            "qos": {"kind": "bandwidth_caps", "window": window, "window_kind": kind,
                    "at": list(at), "classes": [{"name": "high", "cap": caps[0]},
                                                {"name": "low", "cap": caps[1]}]}}


def experiment(m: dict) -> dict:
    """Node 2 sends 120 packets of class high to node 0, node 3 as many of class low."""
    def job(name: str, src: int) -> dict:
        return {"name": name, "class": name, "placement": "all", "shared": True,
                "workload": {"kind": "messages",
                             "messages": [{"at": "0ns", "src": src, "dst": 0,
                                           "size": 120 * PKT}]}}
    return {"machine": m, "routing": {"algorithm": "minimal"},
            "jobs": [job("high", 2), job("low", 3)],
            "stop": {"warmup": "0ns", "measure": "500us"}}


def point(tmp_path, m: dict):  # noqa: ANN201
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(experiment(m)))
    return load_experiment(path).points[0]


# --------------------------------------------------------------------------- the bound


def test_ring_entries_is_the_smaller_of_the_cap_and_the_window_bound():
    # cap: all sends but the oldest sum below the cap: 1 + (capb - 1) // smallest
    assert ring_entries(60_000, 1000.0, 100 * US, PKT) == 60
    assert ring_entries(60_001, 1000.0, 100 * US, PKT) == 61
    assert ring_entries(8, 1000.0, 100 * US, 8) == 1
    assert ring_entries(0, 1000.0, 100 * US, PKT) == 1  # a cap of 0 B keeps the last send
    # window: sends younger than W, one per serialisation (1 B at 1.5 ps/B: int(2.0) = 2 ps)
    assert ring_entries(67, 1.5, 100, 1) == (100 - 1) // 2 + 1 == 50
    # vectorised over ports and classes, as the engine's caps are
    got = ring_entries(np.array([[60_000, 40_000]]), np.array([[1000.0], [500.0]]), 100 * US,
                       PKT)
    assert got.tolist() == [[60, 40], [60, 40]]


def test_the_estimate_counts_the_rings_by_the_closed_form(tmp_path):
    # The NICs (2 GB/s, with injection in at) bind: class low's cap is 0.6 x 100 us x 2 GB/s
    # = 120000 B, 120 packets of 1000 B (the window allows 100 us / 500 ns = 200 sends): a
    # ring holds at most 120 sends, 121 slots with the one written before the oldest goes.
    # Every port has a ring per class, held beside its copy while it grows: 2 x 121 - 1.
    est = check_machine_memory(point(tmp_path, machine()).machine, 1 << 40)
    assert est is not None
    assert est.rings == RING_SLOT_BYTES * PORTS * 2 * (2 * 121 - 1) == 277_632
    assert "QoS rings" in est.describe()
    assert est.total == est.network + est.tables + est.rings
    # at the router outputs only, the links (1 GB/s) bind: 60000 B, 60 sends, 61 slots
    est = check_machine_memory(point(tmp_path, machine(at=("router_outputs",))).machine,
                               1 << 40)
    assert est is not None and est.rings == RING_SLOT_BYTES * PORTS * 2 * (2 * 61 - 1)


def test_a_static_window_has_no_ring_term(tmp_path):
    est = check_machine_memory(point(tmp_path, machine(kind="static")).machine, 1 << 40)
    assert est is not None and est.rings == 0
    assert "QoS rings" not in est.describe()


# --------------------------------------------------------------------------- the engine


def test_the_rings_grow_up_to_the_estimate_and_no_further(tmp_path, ring_growth):
    p = point(tmp_path, machine())
    slots = ring_growth
    prep = prepare(p)
    raw = p.engine.run(prep.job)
    assert raw.packets.delivered == 240
    # doubled from 8, then stopped at the bound of the NIC's ring of class low: 121 slots
    assert slots == [16, 32, 64, 121]


def caps_state(capb: int, K: int = 8) -> Q.QosState:
    """A sliding state of two ports and two classes, ports of 1 ps per byte, a 10 ms window."""
    st = Q.new_state(Q.K_CAPS, 2, 2, window_ps=10**10, sliding=True, caps=[1.0, 1.0], ring=K)
    st, _ = Q.run_state(st, np.ones(2), 2)
    st.capb[:] = capb
    return st


def test_grow_rings_doubles_and_keeps_the_sends_in_order():
    st = caps_state(capb=10**6)
    K = 8
    head = 5  # ring 3 wraps: its oldest send is in slot 5
    slots = 3 * K + (head + np.arange(K)) % K
    st.ring_t[slots] = np.arange(K) * 10
    st.ring_b[slots] = 100 + np.arange(K)
    st.ring_head[3], st.ring_n[3] = head, K
    st.full[0] = 1
    grown = grow_rings(st)
    assert int(grown.ring_k[0]) == 16 and grown.full[0] == 0
    assert grown.ring_t[3 * 16:3 * 16 + K].tolist() == list(range(0, 80, 10))
    assert grown.ring_b[3 * 16:3 * 16 + K].tolist() == list(range(100, 108))
    assert grown.ring_head[3] == 0 and grown.ring_n[3] == K


def test_grow_rings_stops_at_the_bound_of_the_ring_that_filled():
    # a cap of 10 B and 1 B sends: at most 10 sends, 11 slots, not 16
    st = caps_state(capb=10)
    st.ring_b[:8] = 1
    st.ring_n[0] = 8
    st.full[0] = 1
    assert int(grow_rings(st).ring_k[0]) == 11


# --------------------------------------------------------------------------- the CLI


def run_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:  # noqa: ANN001
    """The console script in its own process (exit status, output and error as a user sees
    them)."""
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                           *args], capture_output=True, text=True, cwd=cwd, env=env)


def cli(capsys, monkeypatch, tmp_path, *args: str) -> subprocess.CompletedProcess:  # noqa: ANN001
    """The same command in this process (``main``, what the console script exits with):
    seconds faster than a new interpreter per command."""
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    rc = main(list(args))
    got = capsys.readouterr()
    return subprocess.CompletedProcess(args, rc, got.out, got.err)


#: a 1 s window: class caps of 1 at the NICs' 2 GB/s are 2e9 B, two million packets
LONG = machine(window="1s", caps=(1.0, 1.0))
LIMIT = "256MiB"


def refusal(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert "Traceback" not in r.stderr
    err = r.stderr.strip()
    assert err.startswith("error: ") and "\n" not in err
    return err


def test_validate_and_run_refuse_a_sliding_window_whose_rings_pass_the_limit(tmp_path, capsys,
                                                                              monkeypatch):
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(experiment(LONG)))
    out = tmp_path / "out"
    for r in (cli(capsys, monkeypatch, tmp_path, "validate", "e.yaml", "--max-memory", LIMIT),
              run_cli("run", "e.yaml", "--out", str(out), "--max-memory", LIMIT,
                      cwd=tmp_path)):
        err = refusal(r)
        assert err.startswith("error: e.yaml: machine.qos.window: a sliding window "
                              "(window_kind: sliding) of 1s"), err
        for piece in ("up to 2000000 in a ring", "class 'high': cap 1 at the NICs, "
                      "1.86GiB/s, is 2000000000 B per window; packets of 1000 B, packet_size",
                      "2000001 slots of 16 B at each of 36 ports x 2 classes", "QoS rings",
                      "more than the limit of 0.25 GiB", "--max-memory",
                      "give a window of at most ", "window_kind: static"):
            assert piece in err, (piece, err)
    assert not out.exists()


def test_the_window_the_refusal_advises_fits_and_a_static_one_passes(tmp_path, capsys,
                                                                     monkeypatch):
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(experiment(LONG)))
    err = refusal(cli(capsys, monkeypatch, tmp_path, "validate", "e.yaml", "--max-memory",
                      LIMIT))
    advised = re.search(r"give a window of at most (\S+),", err)
    assert advised, err
    # that window's rings fit beside the network; beside this point's packets too (the
    # rows a run holds, its kept tables: checked with the rings, never apart) they do not,
    # and the point's refusal advises the window that fits beside them as well
    r = cli(capsys, monkeypatch, tmp_path, "validate", "e.yaml", "--max-memory", LIMIT,
            "--set", f"machine.qos.window={advised.group(1)}")
    err = refusal(r)
    assert err.startswith("error: e.yaml: machine.qos.window: a sliding window"), err
    assert "with them this point (240 packets)" in err and "packets 0.0313 GiB" in err, err
    beside = re.search(r"give a window of at most (\S+),", err)
    assert beside, err
    for setting in (f"machine.qos.window={beside.group(1)}",
                    "machine.qos.window_kind=static"):
        r = cli(capsys, monkeypatch, tmp_path, "validate", "e.yaml", "--max-memory", LIMIT,
                "--set", setting)
        assert r.returncode == 0, (setting, r.stderr)


def test_validate_refuses_it_in_a_machine_file_alone(tmp_path, capsys, monkeypatch):
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(LONG))
    err = refusal(cli(capsys, monkeypatch, tmp_path, "validate", "m.yaml", "--max-memory",
                      LIMIT))
    assert err.startswith("error: m.yaml: qos.window: a sliding window"), err
    static = {**LONG, "qos": {**LONG["qos"], "window_kind": "static"}}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(static))
    r = cli(capsys, monkeypatch, tmp_path, "validate", "m.yaml", "--max-memory", LIMIT)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("kind", ["static", "sliding"])
def test_a_short_window_fits_a_small_limit(tmp_path, capsys, monkeypatch, kind):
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(experiment(machine(kind=kind))))
    r = cli(capsys, monkeypatch, tmp_path, "validate", "e.yaml", "--max-memory", LIMIT)
    assert r.returncode == 0, r.stderr
