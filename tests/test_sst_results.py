"""SST adapter: refusals, deterministic bytes, the statistics/stdout parsers, the launcher, the
engine plugin without SST installed, and a real run where ``sst`` is on PATH."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from conftest import one_error, run_cli

from federation.errors import BackendUnavailable, ConfigError, SimulationError

REPO = Path(__file__).resolve().parent.parent
MACHINES = REPO / "schemas" / "machines"
SST = shutil.which("sst")


def write_exp(tmp_path: Path, machine: str | dict, **exp: object) -> Path:
    doc = {"machine": str(MACHINES / machine) if isinstance(machine, str) else machine,
           "engine": {"kind": "sst"}, "stop": {"warmup": "1us", "measure": "3us"},
           "workload": {"kind": "synthetic", "load": 0.3}, **exp}
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def config_error(tmp_path: Path, machine: str | dict, **exp: object) -> str:
    from federation.adapters.sst.run import generate
    from federation.pipeline.load import load_experiment

    with pytest.raises(ConfigError) as e:
        generate(load_experiment(write_exp(tmp_path, machine, **exp)))
    return str(e.value)


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("machine,exp,where,words", [
    ("megafly-qos-megafly.yaml", {}, "megafly-qos-megafly.yaml: topology.kind", "anytopo"),
    ("aries-xc.yaml", {}, "aries-xc.yaml: topology.kind", "no Aries"),
    ("circulant-g1024-10.yaml", {}, "circulant-g1024-10.yaml: topology.kind", "no circulant"),
    ("bluegene-p-8x8x8.yaml", {}, "bluegene-p-8x8x8.yaml: links.torus.bandwidth",
     "one link_bw"),
    ("bluegene-q-8x4x4x4x2.yaml", {}, "bluegene-q-8x4x4x4x2.yaml: links.torus.bandwidth",
     "one link_bw"),
    ("manynode-fattree-96-96-48.yaml", {}, "manynode-fattree-96-96-48.yaml: topology",
     "12 parallel cables"),
    ("quickstart-dragonfly.yaml", {"workload": {"kind": "synthetic", "pattern": "group_shift"}},
     "e.yaml: workload.pattern", "only the default 'uniform'"),
    ("quickstart-dragonfly.yaml", {"workload": {"kind": "synthetic", "message_size": 2048}},
     "e.yaml: workload.message_size", "single-packet"),
    ("quickstart-dragonfly.yaml", {"workload": {"kind": "messages", "messages": [
        {"at": 0, "src": 0, "dst": 1, "size": 512}]}}, "e.yaml: workload.kind", "replays"),
    ("quickstart-dragonfly.yaml", {"stop": {"warmup": "1us", "messages": 100}},
     "e.yaml: stop.messages", "time window"),
    ("quickstart-dragonfly.yaml", {"routing": {"algorithm": "ugal"}}, "e.yaml: routing.bias",
     "fixed 50 flits (= 25600 B"),
    ({"topology": {"kind": "torus", "dims": [3, 4], "mesh": True}}, {},
     "e.yaml: machine.topology.mesh", "VC 1, which does not exist"),
    ({"topology": {"kind": "torus", "dims": [4, 4]}, "router": {"vcs": 4}},
     {"routing": {"algorithm": "valiant"}}, "e.yaml: routing.algorithm",
     "dimension-order only"),
    ("quickstart-dragonfly.yaml", {"engine": {"kind": "sst", "flit_size": 384}},
     "e.yaml: engine.flit_size", "does not divide"),
    ({"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
      "links": {"terminal": {"buffer": 1000}, "local": {"buffer": 1000},
                "global": {"buffer": 1050}}, "packet_size": 200},
     {"engine": {"kind": "sst", "flit_size": 100}}, "e.yaml: machine.links.global.buffer",
     "whole number of 100 B flits"),
    ({"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}, "router": {"vcs": 2}},
     {"routing": {"algorithm": "valiant"}}, "e.yaml: machine.router.vcs", "at least 3"),
    ({"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
      "links": {"local": {"latency": 0}}}, {"engine": {"kind": "sst", "ranks": 2}},
     "e.yaml: machine.links.local.latency", "cannot cross SST's partitions"),
])
def test_refusals(machine: str | dict, exp: dict, where: str, words: str,
                  tmp_path: Path) -> None:
    """Everything merlin cannot express exactly is refused with one message naming the field
    (in the file that set it), never approximated."""
    if machine == {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
                   "router": {"vcs": 2}}:
        # the native checks refuse first (valiant on 2 VCs); call the generator directly
        from federation.adapters.sst import build_config
        from federation.pipeline.build import build_network
        from federation.pipeline.load import load_experiment

        point = load_experiment(write_exp(tmp_path, machine, **exp)).points[0]
        with pytest.raises(ConfigError) as e:
            build_config(point, build_network(point))
        msg = str(e.value)
    else:
        msg = config_error(tmp_path, machine, **exp)
    assert where in msg and "engine sst:" in msg and words in msg, msg


def test_refusal_through_the_cli(tmp_path: Path) -> None:
    e = write_exp(tmp_path, "megafly-qos-megafly.yaml")
    line = one_error(run_cli("sst", "config", str(e), "--out", str(tmp_path / "c"), cwd=tmp_path))
    assert "topology.kind" in line and "megafly" in line
    assert not (tmp_path / "c").exists()


# --------------------------------------------------------------------------- determinism


def test_same_input_same_bytes(tmp_path: Path) -> None:
    """Two processes with different hash seeds write byte-identical configurations."""
    e = write_exp(tmp_path, "quickstart-dragonfly.yaml", sweep={"workload.load": [0.1, 0.4]})
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"c{seed}"
        r = run_cli("sst", "config", str(e), "--out", str(out), cwd=tmp_path,
                    env={"PYTHONHASHSEED": seed})
        assert r.returncode == 0, r.stderr
        outs.append([p.read_bytes() for p in sorted(out.iterdir())])
    assert len(outs[0]) == 2 and outs[0] == outs[1] and outs[0][0] != outs[0][1]
    assert str(tmp_path) not in outs[0][0].decode()  # no absolute path in the file


# --------------------------------------------------------------------------- parsers

#: sst-core's statOutputCSV header, exactly (separator ", ")
HEADER = ("ComponentName, StatisticName, StatisticSubId, StatisticType, SimTime, Rank, "
          "Sum.u64, SumSQ.u64, Count.u64, Min.u64, Max.u64")
CSV = HEADER + """
rtr0, send_bit_count, port0, Accumulator, 4000000, 0, 40960, 838860800, 10, 4096, 4096
rtr0, send_packet_count, port0, Accumulator, 4000000, 0, 10, 10, 10, 1, 1
rtr0, send_bit_count, port2, Accumulator, 4000000, 0, 81920, 1677721600, 20, 4096, 4096
rtr0, send_packet_count, port2, Accumulator, 4000000, 0, 20, 20, 20, 1, 1
nic0, send_bit_count, , Accumulator, 4000000, 0, 61440, 1258291200, 15, 4096, 4096
nic0, packet_latency, , Accumulator, 4000000, 0, 3000, 930000, 10, 250, 400
"""


def test_parse_stats_csv() -> None:
    from federation.adapters.sst.results import StatRow, parse_stats_csv

    rows = parse_stats_csv(CSV)
    assert len(rows) == 6
    assert rows[0] == StatRow("rtr0", "send_bit_count", "port0", "Accumulator", 4000000, 0,
                              40960, 838860800, 10, 4096, 4096)
    assert rows[4].subid == "" and rows[5].max == 400


@pytest.mark.parametrize("text,error", [
    ("", "empty statistics file"),
    ("ComponentName, StatisticName\n", "header lacks StatisticSubId"),
    (CSV.splitlines()[0] + "\nrtr0, send_bit_count, port0\n", "line 2: 3 fields"),
    (CSV.splitlines()[0] + "\nrtr0, x, p, A, 1, 0, 1.5, 0, 0, 0, 0\n", "line 2: a numeric"),
])
def test_parse_stats_csv_errors(text: str, error: str) -> None:
    from federation.adapters.sst.results import SstOutputError, parse_stats_csv

    with pytest.raises(SstOutputError, match=error):
        parse_stats_csv(text, "stats.csv")


STDOUT = """\
nic0:   Offered   Average
nic0:     Load    Latency
nic0:      0.30         412.5 ns
nic0:
Simulation is complete, simulated time: 4.00012 us
"""


def test_parse_stdout() -> None:
    from federation.adapters.sst.results import parse_stdout

    out = parse_stdout(STDOUT)
    assert out.simulated_time_s == pytest.approx(4.00012e-6)
    assert len(out.loads) == 1 and out.loads[0].load == 0.3
    assert out.loads[0].latency_s == pytest.approx(412.5e-9) and not out.loads[0].behind
    behind = parse_stdout("x:   Offered   Average\nx:      0.90         2.5 us*\n")
    assert behind.loads[0].behind and behind.loads[0].latency_s == pytest.approx(2.5e-6)


def test_summary_from_hand_written_output(tmp_path: Path) -> None:
    """Window figures: a 2-node, 1-router machine where rtr0 port0 is node 0's host port."""
    from federation.adapters.sst.results import parse_stats_csv, parse_stdout, summarize
    from federation.adapters.sst.script import SstConfig
    from federation.adapters.sst.topologies import SstNetwork

    net = SstNetwork("merlin.torus", {}, [4], [("torus", 0, 2, 0, 3)],
                     [(0, 0, 0), (1, 0, 1)], 2)
    cfg = SstConfig("", net, nodes=2, window_ps=(1_000_000, 3_000_000), nic_bandwidth=1e9,
                    port_bandwidth={"terminal": 1e9, "torus": 1e9})
    s = summarize(cfg, parse_stats_csv(CSV), parse_stdout(STDOUT), packet_size=512)
    capacity = 2e-6 * 1e9 * 2  # window x NIC bandwidth x nodes, bytes
    assert s.offered_load == pytest.approx(61440 / 8 / capacity)
    assert s.accepted_load == pytest.approx(40960 / 8 / capacity)  # host port only
    assert s.packets_delivered == 10 and s.packet_hops == 20 and s.mean_hops == 2.0
    assert s.latency_ns.mean == pytest.approx(412.5) and s.message_completion_ns_mean == 412.5
    assert s.network_latency_ns.mean == 300.0 and s.network_latency_ns.max == 400.0
    assert s.simulated_time_ns == pytest.approx(4000.12)


# --------------------------------------------------------------------------- launcher


def test_command_and_launcher() -> None:
    from federation.adapters.sst.launch import command
    from federation.adapters.sst.options import SstOptions

    assert command(SstOptions(), "/x/sst", "config.py") == ["/x/sst", "config.py"]
    assert command(SstOptions(ranks=4, threads=2), "sst", "c.py") == [
        "mpirun", "-n", "4", "sst", "--num-threads", "2", "c.py"]
    assert command(SstOptions(launcher=["srun", "-N2"], threads=2), "sst", "c.py") == [
        "srun", "-N2", "sst", "--num-threads", "2", "c.py"]


def test_engine_parameters_that_would_be_ignored_or_overflow(tmp_path: Path) -> None:
    """`ranks` beside a `launcher` (it would be ignored: the launcher states its own count),
    an empty launcher word, a time limit past a year (Python's timers overflow) and an output
    buffer smaller than a packet (merlin would never send one) are refused naming the field."""
    e = write_exp(tmp_path, "quickstart-dragonfly.yaml",
                  engine={"kind": "sst", "launcher": ["srun", "-N2"], "ranks": 8})
    line = one_error(run_cli("sst", "config", str(e), "--out", "o", cwd=tmp_path))
    assert "engine: give either 'ranks' (8" in line and "not both" in line
    e = write_exp(tmp_path, "quickstart-dragonfly.yaml",
                  engine={"kind": "sst", "launcher": ["mpirun", ""]})
    assert "none of them empty" in one_error(run_cli("sst", "config", str(e), "--out", "o",
                                                     cwd=tmp_path))
    e = write_exp(tmp_path, "quickstart-dragonfly.yaml",
                  engine={"kind": "sst", "timeout": "1e300s"})
    line = one_error(run_cli("sst", "config", str(e), "--out", "o", cwd=tmp_path))
    assert "engine.timeout: 1e+300 s is longer than a year" in line
    e = write_exp(tmp_path, "quickstart-dragonfly.yaml",
                  engine={"kind": "sst", "output_buf_size": "256B"})
    line = one_error(run_cli("sst", "config", str(e), "--out", "o", cwd=tmp_path))
    assert "engine.output_buf_size: engine sst: output_buf_size 256 B is smaller than a " \
        "packet (512 B, packet_size)" in line
    assert not (tmp_path / "o").exists()


def fake_program(tmp_path: Path, body: str) -> Path:
    prog = tmp_path / "fake-sst"
    prog.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n")
    prog.chmod(0o755)
    return prog


def test_run_sst_status_timeout_and_argv(tmp_path: Path) -> None:
    """argv is passed as a list (no shell: a ';' stays one argument); failures and the time
    limit are one SimulationError each, with the output kept."""
    from federation.adapters.sst.launch import run_sst

    ok = fake_program(tmp_path, "print(sys.argv[1:]); print('err', file=sys.stderr)")
    done = run_sst([str(ok), "a;b", "$HOME"], tmp_path, 30)
    assert done.stdout.strip() == "['a;b', '$HOME']" and (tmp_path / "sst.stderr").read_text()
    bad = fake_program(tmp_path, "print('FATAL: boom', file=sys.stderr); sys.exit(3)")
    with pytest.raises(SimulationError, match="exited with status 3.*FATAL: boom"):
        run_sst([str(bad)], tmp_path, 30)
    slow = fake_program(tmp_path, "time.sleep(30)")
    with pytest.raises(SimulationError, match=r"did not finish within 0\.5 s \(engine.timeout\)"):
        run_sst([str(slow)], tmp_path, 0.5)


def _gone(pid: int) -> bool:
    """True when process ``pid`` no longer runs (gone, or a zombie nobody reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def test_timeout_stops_sst_and_its_children_and_keeps_the_output(tmp_path: Path) -> None:
    """Issue 17 case 20: on engine.timeout the stand-in sst *and the child it started* are
    stopped (the process group), and the message names a folder that exists and holds what
    sst wrote (the output folder of the failed run is removed, so not a path inside it)."""
    import time

    pidfile = tmp_path / "child.pid"
    body = ("import subprocess\n"
            "child = subprocess.Popen(['sleep', '60'])\n"
            f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
            "print('sst: started, now hanging', file=sys.stderr, flush=True)\n"
            "time.sleep(60)")
    prog = fake_program(tmp_path, body)
    e = write_exp(tmp_path, "quickstart-dragonfly.yaml",
                  engine={"kind": "sst", "sst_binary": str(prog), "timeout": "1s"})
    t0 = time.monotonic()
    r = run_cli("sst", "run", str(e), "--out", "out", cwd=tmp_path)
    assert time.monotonic() - t0 < 30  # not the stand-in's 60 s
    line = one_error(r)
    assert r.returncode == 2 and "did not finish within 1 s (engine.timeout)" in line
    assert "every process it started were stopped" in line
    kept = Path(re.search(r"kept in (\S+)$", line)[1])
    try:
        assert kept.is_dir() and not kept.is_relative_to(tmp_path / "out")
        assert (kept / "sst.stderr").read_text() == "sst: started, now hanging\n"
        assert (kept / "config.py").is_file()
        child = int(pidfile.read_text())
        deadline = time.monotonic() + 10
        while not _gone(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(child), "the child of sst kept running"
    finally:
        shutil.rmtree(kept, ignore_errors=True)
    assert not (tmp_path / "out").exists()


def test_failed_sst_names_its_kept_folder_and_quotes_stderr(tmp_path: Path) -> None:
    """A stand-in sst killed by a signal: the message says so (not 'status -9'), quotes its
    last stderr line, and the folder it names exists; an sst that exits 0 but writes no
    statistics is named the same way."""
    prog = fake_program(tmp_path, "import os, signal\nprint('FATAL: out of flits', "
                        "file=sys.stderr, flush=True)\nos.kill(os.getpid(), signal.SIGKILL)")
    e = write_exp(tmp_path, "quickstart-dragonfly.yaml",
                  engine={"kind": "sst", "sst_binary": str(prog)})
    line = one_error(run_cli("sst", "run", str(e), "--out", "out", cwd=tmp_path))
    assert "was killed by signal 9 (SIGKILL)" in line and line.endswith(": FATAL: out of flits")
    kept = Path(re.search(r"output kept in (\S+)\)", line)[1])
    assert (kept / "sst.stderr").is_file()
    shutil.rmtree(kept)
    quiet = fake_program(tmp_path, "sys.exit(0)")
    e = write_exp(tmp_path, "quickstart-dragonfly.yaml",
                  engine={"kind": "sst", "sst_binary": str(quiet)})
    line = one_error(run_cli("sst", "run", str(e), "--out", "out", cwd=tmp_path))
    kept = Path(re.search(r"(/\S+)/stats\.csv: empty statistics file", line)[1])
    assert (kept / "config.py").is_file() and (kept / "sst.stdout").is_file()
    shutil.rmtree(kept)
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- the engine


def test_engine_not_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without sst: found() is False, and both ways of running end with one message, exit 2,
    nothing written."""
    from federation.adapters.sst.launch import require_sst
    from federation.adapters.sst.options import SstOptions
    from federation.plugins.engines.sst import Sst

    empty = tmp_path / "bin"
    empty.mkdir()
    env = {"PATH": str(empty)}
    with monkeypatch.context() as m:
        m.setenv("PATH", str(empty))
        assert not Sst.found()
        with pytest.raises(BackendUnavailable, match="program 'sst' not found"):
            require_sst(SstOptions())
    e = write_exp(tmp_path, "quickstart-dragonfly.yaml")
    for args in (("run", str(e), "--out", "o1"), ("sst", "run", str(e), "--out", "o2")):
        line = one_error(run_cli(*args, cwd=tmp_path, env=env))
        assert "engine sst: program 'sst' not found (engine.sst_binary)" in line
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()
    # what merlin cannot express is refused first by both, sst or not (docs/sst.md); `sst
    # run` asked for sst before its points' checks
    bad = ("--set", "workload.pattern=group_shift")
    lines = [one_error(run_cli(*args, *bad, cwd=tmp_path, env=env))
             for args in (("run", str(e), "--out", "o1"), ("sst", "run", str(e), "--out", "o2"))]
    assert lines[0] == lines[1] and "pattern 'group_shift': this adapter maps only" in lines[0]


def test_federation_run_runs_sst_like_any_engine(tmp_path: Path) -> None:
    """Issue 21 item 7: `federation run` with engine sst runs it (no pointer to another
    command): the same results.json, tables and kept files as `federation sst run`."""
    import json

    body = ("open('stats.csv', 'w').write('''" + CSV + "''')\n"
            "print('''" + STDOUT + "''')")
    prog = fake_program(tmp_path, body)
    e = write_exp(tmp_path, "quickstart-dragonfly.yaml",
                  engine={"kind": "sst", "sst_binary": str(prog)})
    for args in (("run", str(e), "--out", "a"), ("sst", "run", str(e), "--out", "b")):
        r = run_cli(*args, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    docs = [json.loads((tmp_path / d / "results.json").read_text()) for d in "ab"]
    assert docs[0] == docs[1]
    (pt,) = docs[0]["points"]
    assert pt["engine"] == "sst" and pt["summary"]["latency_ns"]["mean"] == 412.5
    assert pt["summary"]["latency_ns"]["p50"] is None  # merlin does not report it
    assert pt["files"] == {"ports": "ports-0.parquet", "sst_config": "sst-0/config.py"}
    for f in ("sst-0/config.py", "sst-0/stats.csv", "ports-0.parquet"):
        assert (tmp_path / "a" / f).exists(), f


def test_run_with_a_stand_in_sst(tmp_path: Path) -> None:
    """The whole `federation sst run` path with a stand-in program that writes output in
    SST's formats: results.json with engine sst, the configuration and output kept."""
    import json

    body = ("open('stats.csv', 'w').write('''" + CSV + "''')\n"
            "print('''" + STDOUT + "''')")
    prog = fake_program(tmp_path, body)
    e = write_exp(tmp_path, "quickstart-dragonfly.yaml",
                  engine={"kind": "sst", "sst_binary": str(prog)})
    r = run_cli("sst", "run", str(e), "--out", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    (pt,) = doc["points"]
    assert pt["engine"] == "sst" and pt["summary"]["latency_ns"]["mean"] == 412.5
    assert pt["routing_description"] == "merlin merlin.dragonfly, routing minimal"
    assert pt["resolved"]["engine"]["kind"] == "sst"
    for f in ("sst-0/config.py", "sst-0/stats.csv", "sst-0/sst.stdout", "ports-0.parquet"):
        assert (tmp_path / "out" / f).exists(), f


@pytest.mark.skipif(SST is None, reason="sst is not on PATH (SST is in no package registry; "
                    "build sst-core and sst-elements outside the repository to run this)")
def test_real_sst_quickstart(tmp_path: Path) -> None:
    """A real merlin run of the quickstart dragonfly at low load: it finishes, its statistics
    parse, and at 0.1 load what was offered is accepted."""
    import json

    e = write_exp(tmp_path, "quickstart-dragonfly.yaml",
                  workload={"kind": "synthetic", "load": 0.1},
                  stop={"warmup": "1us", "measure": "5us"})
    r = run_cli("sst", "run", str(e), "--out", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "out" / "results.json").read_text())["points"][0]["summary"]
    assert s["latency_ns"]["mean"] > 0 and s["packets_delivered"] > 0
    assert s["accepted_load"] == pytest.approx(s["offered_load"], rel=0.15)


def test_a_failing_sst_point_keeps_the_finished_ones(tmp_path: Path) -> None:
    """`federation sst run` goes through the one runner: when sst fails on the second point
    of a sweep, the first point's results and files are kept, results.json says incomplete
    and names the missing point (the old driver removed the whole folder)."""
    import json

    body = ("import os\n"
            "if os.path.exists(" + repr(str(tmp_path / "ran-once")) + "):\n"
            "    sys.exit(3)\n"
            "open(" + repr(str(tmp_path / "ran-once")) + ", 'w').close()\n"
            "open('stats.csv', 'w').write('''" + CSV + "''')\n"
            "print('''" + STDOUT + "''')")
    prog = fake_program(tmp_path, body)
    e = write_exp(tmp_path, "quickstart-dragonfly.yaml",
                  engine={"kind": "sst", "sst_binary": str(prog)},
                  sweep={"workload.load": [0.3, 0.4]})
    r = run_cli("sst", "run", str(e), "--out", "out", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "exited with status 3" in r.stderr and "1 of 2 points finished" in r.stderr
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["status"] == "incomplete" and doc["missing_points"] == [1]
    (pt,) = doc["points"]
    assert pt["index"] == 0 and pt["engine"] == "sst"
    assert (tmp_path / "out" / "sst-0" / "config.py").exists()
    kept = Path(re.search(r"output kept in (\S+)\)", r.stderr)[1])
    assert (kept / "config.py").is_file() and "load=0.4" in (kept / "config.py").read_text()
    shutil.rmtree(kept)  # the failed point's folder, kept and named for the user
