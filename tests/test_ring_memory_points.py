"""A sliding QoS window's rings of sends in a point's memory estimate, for the point's own
packets and together with them; and the packets' memory checked by ``validate`` as by ``run``.

The estimate's rings (``bounds.ring_memory``) assumed packets of ``packet_size``, but a message
shorter than a packet, or not a multiple of it, and rank programs' rendezvous packets
(``nic.control_bytes``) make more sends per byte cap, so a run's rings grew past the estimate
(``rings.smallest_packet``, ``rings.program_smallest``); a sweep over message sizes on one
machine kept the first point's rings.  The packets' checks rebuilt the estimate without the
rings (each checked against the limit, never together), and the rows a run may hold left
them out.  A topology that counts itself only once built (``graph_file`` above 64 MiB) got no
ring check.  The kept tables' check was made only when a point was prepared in ``run``, so
``validate`` passed what ``run`` refused.  ``run`` declared its own ``--max-memory``.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess

import numpy as np
import pytest
import typer.main
import yaml
from conftest import one_error, run_cli

from federation.cli import main
from federation.cli.app import app
from federation.cli.run import MaxMemory
from federation.engine.qos_rings import RING_SLOT_BYTES, ring_peak_slots
from federation.errors import ConfigError
from federation.pipeline import rank_programs, traffic
from federation.pipeline.bounds import PER_ROW, packets_memory
from federation.pipeline.load import load_experiment
from federation.pipeline.point import BuildCache, prepare
from federation.pipeline.rings import (
    RingSite,
    machine_link_classes,
    program_smallest,
    ring_memory,
    smallest_packet,
)

PKT = 1000
PORTS = 36  # the small dragonfly: 2 x 12 nodes + 2 x 6 cables
MiB = 1 << 20


def machine(window: str = "100us", caps: tuple[float, float] = (0.4, 0.6), **extra) -> dict:
    """The small dragonfly (12 nodes), links of 1 GB/s, NICs of 2 GB/s, packets of 1000 B,
    a sliding window at the router outputs and the NICs."""
    link = {"bandwidth": "1GB/s", "latency": "0ns"}
    return {"topology": {"kind": "dragonfly", "p": 2, "a": 2, "h": 1},
            "links": {"terminal": {**link, "latency": "500ns"}, "local": link, "global": link},
            "nic": {"bandwidth": "2GB/s"}, "router": {"vcs": 4, "delay": "0ns"},
            "packet_size": PKT,
            "qos": {"kind": "bandwidth_caps", "window": window, "window_kind": "sliding",
                    "at": ["router_outputs", "injection"],
                    "classes": [{"name": "high", "cap": caps[0]},
                                {"name": "low", "cap": caps[1]}]}, **extra}


def listed(m: dict, sizes: list[int], copies: int = 1, **extra) -> dict:
    """Node 2 sends ``copies`` messages of each size to node 0 at time 0, in class high."""
    msgs = [{"at": "0ns", "src": 2, "dst": 0, "size": s} for s in sizes for _ in range(copies)]
    return {"machine": m, "routing": {"algorithm": "minimal"},
            "jobs": [{"name": "high", "class": "high", "placement": "all",
                      "workload": {"kind": "messages", "messages": msgs}}],
            "stop": {"warmup": "0ns", "measure": "500us"}, **extra}


def synthetic(m: dict, **workload) -> dict:
    return {"machine": m, "routing": {"algorithm": "minimal"},
            "workload": {"kind": "synthetic", "load": 0.1, **workload},
            "classes": {"workload": "high"}, "stop": {"warmup": "0ns", "measure": "2us"}}


def load_point(tmp_path, doc: dict, index: int = 0):  # noqa: ANN201
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_experiment(path).points[index]


def rings_for(m: dict, tmp_path, smallest: int | None) -> int:
    """The rings' term of machine ``m`` for packets of ``smallest`` B (``None``:
    packet_size), by ``ring_memory`` on the machine's 36 ports."""
    rm = load_point(tmp_path, listed(m, [PKT])).machine
    r = ring_memory(RingSite(rm, PORTS, machine_link_classes(rm), smallest))
    assert r is not None
    return r.bytes


def cli(capsys, monkeypatch, tmp_path, *args: str) -> subprocess.CompletedProcess:  # noqa: ANN001
    """``federation ARGS`` in this process (``main``: what the console script exits with)."""
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    rc = main(list(args))
    got = capsys.readouterr()
    return subprocess.CompletedProcess(args, rc, got.out, got.err)


def refused_alike(capsys, monkeypatch, tmp_path, doc: dict, limit: str) -> str:
    """``validate`` refuses with one line, ``run`` (its own process) with the same line,
    writing nothing."""
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    line = one_error(cli(capsys, monkeypatch, tmp_path, "validate", "e.yaml",
                         "--max-memory", limit))
    r = run_cli("run", "e.yaml", "--out", "o", "--max-memory", limit, cwd=tmp_path)
    assert one_error(r) == line
    assert not (tmp_path / "o").exists()
    return line


# --------------------------------------------------------------------------- 1: the packets


def test_the_smallest_packet_is_the_one_the_files_state(tmp_path):
    m = machine()
    assert smallest_packet(load_point(tmp_path, listed(m, [120 * PKT]))).bytes == PKT
    s = smallest_packet(load_point(tmp_path, listed(m, [3 * PKT, 300, 1700])))
    assert (s.bytes, s.why) == (300, "a 300 B message (jobs[0].workload.messages[1].size)")
    s = smallest_packet(load_point(tmp_path, synthetic(m, message_size=1500)))
    assert (s.bytes, s.why) == (500, "the last packet of a 1500 B message "
                                     "(workload.message_size)")
    assert smallest_packet(load_point(tmp_path, synthetic(m))).bytes == PKT  # its default
    assert smallest_packet(load_point(tmp_path, synthetic(m, message_size=2 * PKT))).bytes == PKT


def test_a_workload_that_states_no_sizes_is_assumed_to_make_1_byte_packets(tmp_path):
    p = load_point(tmp_path, synthetic(machine(), message_size=PKT))
    own = type("Own", (type(p.workload),), {"__module__": "someone_elses_plugin"})
    s = smallest_packet(dataclasses.replace(p, workload=own(p.workload.params)))
    assert s.bytes == 1
    assert "workload 'synthetic' (workload) does not state its message sizes" in s.why


def test_rank_programs_packets_their_messages_and_control_packets(tmp_path):
    def smallest(sizes: list[int], zero: bool = False, **nic):  # noqa: ANN202
        m = machine(nic={"bandwidth": "2GB/s", **nic})
        doc = {"machine": m, "workload": {"kind": "pingpong", "sizes": sizes}}
        p = load_point(tmp_path, doc)
        cache = BuildCache(1 << 34)
        progs = cache.programs.peek(p, cache.get(p))[0]
        if zero:  # a zero-byte message is one 1 B packet
            progs = dataclasses.replace(progs, op_bytes=np.zeros_like(progs.op_bytes))
        return program_smallest(progs, p.machine.machine)

    assert smallest([PKT, 2 * PKT]).bytes == PKT
    assert smallest([1200]).bytes == 200
    assert smallest([PKT], zero=True).bytes == 1
    s = smallest([4 * PKT], eager_threshold=PKT)  # rendezvous: requests and replies
    assert (s.bytes, s.why.split(" ")[0]) == (64, "nic.control_bytes")
    assert smallest([4 * PKT], eager_threshold=PKT, control_bytes=16).bytes == 16


def test_the_estimate_counts_the_rings_for_the_points_smallest_packet(tmp_path):
    m = machine()
    small = BuildCache(1 << 34).get(load_point(tmp_path, listed(m, [300, 120 * PKT])))
    assert small.memory.rings == rings_for(m, tmp_path, 300) > rings_for(m, tmp_path, None)
    whole = BuildCache(1 << 34).get(load_point(tmp_path, listed(m, [120 * PKT])))
    assert whole.memory.rings == rings_for(m, tmp_path, None)


def test_a_run_of_short_packets_stays_within_its_estimate(tmp_path, ring_growth):
    # 400 messages of 300 B from node 2 in class high (cap 0.4 of the NIC's 2 GB/s over
    # 100 us: 80000 B, 267 sends of 300 B, but 80 of packet_size): the NIC's ring grows past
    # the bound of packet_size, never past the estimate's
    p = load_point(tmp_path, listed(machine(), [300], copies=400))
    slots = ring_growth
    prep = prepare(p, max_memory=1 << 34)
    raw = p.engine.run(prep.job)
    assert raw.packets.delivered == 400
    K = max(slots)
    assert K > 81  # past 80 sends of packet_size and the one written before the oldest goes
    held = RING_SLOT_BYTES * PORTS * 2 * ring_peak_slots(K)
    assert held <= prep.built.memory.rings


#: a 20 ms window with caps of 1 at the NICs' 2 GB/s: 40 MB per window, 40000 sends of
#: packet_size (about 92 MiB of rings), 133334 of 300 B (307 MiB)
LONG = machine(window="20ms", caps=(1.0, 1.0))


def test_validate_and_run_refuse_the_rings_of_short_messages(tmp_path, capsys, monkeypatch):
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(listed(LONG, [PKT])))
    r = cli(capsys, monkeypatch, tmp_path, "validate", "e.yaml", "--max-memory", "256MiB")
    assert r.returncode == 0, r.stderr
    line = refused_alike(capsys, monkeypatch, tmp_path, listed(LONG, [PKT, 300]), "256MiB")
    assert line.startswith("error: e.yaml: machine.qos.window: a sliding window"), line
    assert "packets of 300 B, a 300 B message (jobs[0].workload.messages[1].size)" in line


def test_each_point_of_a_sweep_gets_the_rings_of_its_own_packets(tmp_path, capsys,
                                                                  monkeypatch):
    # one machine, built once; the second point's messages are 300 B
    doc = {**synthetic(LONG), "sweep": {"workload.message_size": [PKT, 300]}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    line = one_error(cli(capsys, monkeypatch, tmp_path, "validate", "e.yaml", "--max-memory",
                         "256MiB"))
    assert line.startswith("error: e.yaml: machine.qos.window: a sliding window"), line
    assert "packets of 300 B, a 300 B message (workload.message_size)" in line
    assert "(sweep point 1: workload.message_size=300)" in line, line


def test_rank_programs_rendezvous_packets_are_in_their_rings(tmp_path, capsys, monkeypatch):
    m = machine(window="20ms", caps=(1.0, 1.0),
                nic={"bandwidth": "2GB/s", "eager_threshold": PKT, "control_bytes": 200})
    doc = {"machine": m, "workload": {"kind": "pingpong", "sizes": [4 * PKT]},
           "classes": {"workload": "high"}}
    line = refused_alike(capsys, monkeypatch, tmp_path, doc, "256MiB")
    assert line.startswith("error: e.yaml: machine.qos.window: a sliding window"), line
    assert "packets of 200 B, nic.control_bytes (rank programs' rendezvous" in line, line
    # eagerly sent, the same messages make packets of packet_size only: they fit
    doc["machine"]["nic"]["eager_threshold"] = 4 * PKT
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    r = cli(capsys, monkeypatch, tmp_path, "validate", "e.yaml", "--max-memory", "256MiB")
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------- 2: together


def test_the_rows_a_run_may_hold_leave_room_for_the_rings(tmp_path):
    limit = 1 << 30
    p = load_point(tmp_path, listed(machine(window="1ms"), [PKT]))
    prep = prepare(p, max_memory=limit)
    mem = prep.built.memory
    assert mem.rings > 0
    spare = limit - mem.network - mem.tables - mem.rings - packets_memory(1, True)
    assert prep.job.max_rows == spare // PER_ROW


def test_rank_programs_operations_are_counted_beside_the_rings(tmp_path):
    p = load_point(tmp_path, {"machine": machine(window="1ms"),
                              "workload": {"kind": "pingpong", "sizes": [PKT]}})
    built = BuildCache(1 << 34).get(p)
    assert built.memory.rings > 0
    budget = rank_programs.op_budget(built, built.memory.total + 400 * 10)
    assert budget.max_ops == 10
    ops = rank_programs.build_programs(p, built, 1 << 34).n_ops
    with pytest.raises(ConfigError, match=r"operations"):
        rank_programs.build_programs(p, built, built.memory.total + 400 * ops - 1)
    rank_programs.build_programs(p, built, built.memory.total + 400 * ops)


def test_the_packets_and_the_rings_are_checked_together(tmp_path, capsys, monkeypatch):
    # a 7 ms window: 14000 sends of 1000 B a ring, 32 MB of rings beside the network, and
    # the rows of packets a run holds (4 chunks: 34 MB) fit 50 MiB apart, not together
    m = machine(window="7ms", caps=(1.0, 1.0))
    doc = {**listed(m, [PKT]), "outputs": {"packets": False, "messages": False}}
    line = refused_alike(capsys, monkeypatch, tmp_path, doc, "50MiB")
    assert line.startswith("error: e.yaml: machine.qos.window: a sliding window (window_kind: "
                           "sliding) of 7ms"), line
    assert "with them this point (1 packets) needs about" in line and "QoS rings" in line
    advised = re.search(r"give a window of at most (\S+),", line)
    assert advised, line
    r = cli(capsys, monkeypatch, tmp_path, "validate", "e.yaml", "--max-memory", "50MiB",
            "--set", f"machine.qos.window={advised.group(1)}")
    assert r.returncode == 0, r.stderr
    # packets that do not fit even without the rings are refused as the packets' field
    big = {**listed(m, [17 * 10**9]), "outputs": {"packets": False, "messages": False}}
    line = refused_alike(capsys, monkeypatch, tmp_path, big, "50MiB")
    assert line.startswith("error: e.yaml: stop.measure: this point (17000000 packets)"), line
    assert "QoS rings" in line


# --------------------------------------------------------------------------- 3: built first


@pytest.fixture
def uncounted(monkeypatch):
    """``graph_file`` counting no JSON file before building (as above 64 MiB)."""
    from federation.plugins.topologies import graph_file

    monkeypatch.setattr(graph_file, "SIZE_JSON_LIMIT", -1)
    graph_file._file_size.cache_clear()
    yield
    graph_file._file_size.cache_clear()


def graph_machine(tmp_path) -> dict:
    (tmp_path / "g.json").write_text('{"routers": 3, "links": [[0, 1], [1, 2], [2, 0]], '
                                     '"nodes_per_router": 2}')
    m = machine(window="1s", caps=(1.0, 1.0))
    m["topology"] = {"kind": "graph_file", "path": "g.json"}
    m["links"] = {"terminal": m["links"]["terminal"]}
    return m


def test_a_machine_counted_once_built_gets_its_rings_checked(tmp_path, capsys, monkeypatch,
                                                             uncounted):
    m = graph_machine(tmp_path)
    p = load_point(tmp_path, listed(m, [PKT]))
    assert p.machine.topology.size() is None
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(m))
    line = one_error(cli(capsys, monkeypatch, tmp_path, "validate", "m.yaml", "--max-memory",
                         "256MiB"))
    assert line.startswith("error: m.yaml: qos.window: a sliding window"), line
    assert "at each of 18 ports x 2 classes" in line and "3 routers, 6 nodes" in line
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(listed(m, [PKT])))
    line = one_error(cli(capsys, monkeypatch, tmp_path, "validate", "e.yaml", "--max-memory",
                         "256MiB"))
    assert line.startswith("error: e.yaml: machine.qos.window: a sliding window"), line
    assert "at each of 18 ports x 2 classes" in line
    with pytest.raises(ConfigError, match=r"machine\.qos\.window: .*packets of 300 B"):
        BuildCache(256 * MiB).get(load_point(tmp_path, listed(m, [300])))


# --------------------------------------------------------------------------- 4: kept tables


def test_validate_refuses_the_kept_tables_run_refuses(tmp_path, capsys, monkeypatch):
    # a streamed synthetic job: 2.4e6 packets expected over 1 s at load 0.1 on 12 NICs of
    # 2 GB/s, 0.57 GiB with their tables; the run's rows alone fit
    m = machine()
    m["qos"] = {"kind": "none"}
    doc = {**synthetic(m), "stop": {"warmup": "0ns", "measure": "1s"}}
    doc.pop("classes")
    line = refused_alike(capsys, monkeypatch, tmp_path, doc, "512MiB")
    assert line.startswith("error: e.yaml: outputs.packets: this point (2400000 packets) "
                           "with its packets and messages tables"), line
    doc["outputs"] = {"packets": False, "messages": False}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    r = cli(capsys, monkeypatch, tmp_path, "validate", "e.yaml", "--max-memory", "512MiB")
    assert r.returncode == 0, r.stderr


def test_validate_refuses_the_listed_messages_run_refuses(tmp_path, capsys, monkeypatch):
    m = machine()
    m["qos"] = {"kind": "none"}
    doc = listed(m, [2**30])  # 1073742 packets of 1000 B, held whole and kept
    del doc["jobs"]
    doc["workload"] = {"kind": "messages",
                       "messages": [{"at": "0ns", "src": 2, "dst": 0, "size": 2**30}]}
    line = refused_alike(capsys, monkeypatch, tmp_path, doc, "256MiB")
    assert line.startswith("error: e.yaml: outputs.packets: this point (1073742 packets) "
                           "with its packets and messages tables"), line


def test_several_jobs_packets_are_checked_together_before_the_run(tmp_path, capsys,
                                                                  monkeypatch):
    m = machine()
    m["qos"] = {"kind": "none"}
    job = {"placement": "all", "shared": True,
           "workload": {"kind": "messages",
                        "messages": [{"at": "0ns", "src": 2, "dst": 0, "size": 2**29}]}}
    doc = {"machine": m, "routing": {"algorithm": "minimal"},
           "jobs": [{"name": "a", **job}, {"name": "b", **job}],
           "stop": {"warmup": "0ns", "measure": "500us"}}
    line = refused_alike(capsys, monkeypatch, tmp_path, doc, "256MiB")
    assert line.startswith("error: e.yaml: outputs.packets: this point (1073742 packets)"), line


# --------------------------------------------------------------------------- 5 and 6


def option_help(command: str) -> str:
    click = typer.main.get_command(app)
    (param,) = [p for p in click.commands[command].params if "--max-memory" in p.opts]
    return param.help


def test_run_declares_the_shared_max_memory_option():
    assert option_help("run") == option_help("validate") == MaxMemory.__metadata__[0].help
    assert "as for 'run'" not in option_help("run")


def test_run_reads_max_memory_as_validate_does(tmp_path):
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(listed(machine(), [PKT])))
    for bad in ("lots", "0"):
        ref = one_error(run_cli("validate", "e.yaml", "--max-memory", bad, cwd=tmp_path))
        assert one_error(run_cli("run", "e.yaml", "--out", "o", "--max-memory", bad,
                                 cwd=tmp_path)) == ref
    env = {"FEDERATION_MAX_MEMORY": "lots"}
    ref = one_error(run_cli("validate", "e.yaml", cwd=tmp_path, env=env))
    assert one_error(run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path, env=env)) == ref
    assert not (tmp_path / "o").exists()


def test_the_docs_say_validate_draws_streamed_workloads_windows():
    from pathlib import Path

    from federation.pipeline import point
    from federation.plugin.components import Workload

    assert "window_draw" in (Workload.message_times.__doc__ or "")
    assert "window_draw" in (point.preflight.__doc__ or "")
    doc = (Path(__file__).parents[1] / "docs" / "architecture.md").read_text()
    para = doc[doc.index("A point whose window holds no packet"):]
    para = para[:para.index("\n8. ")]
    assert "messages.window_draw" in para and "synthetic" in para
    assert traffic.check_given_traffic.__doc__
