"""ember's output read back (closed-loop points): parsers checked on real SST output.

``tests/data/sst/pingpong-tiny/`` holds what sst 16.0.0 (sst-core ffd7152, sst-elements 242b48a,
built outside the repository) wrote for ``tests/data/sst/pingpong-tiny.yaml``: ember's motif
log, sst's stdout and merlin's statistics.  CI has no SST, so these files are how the parser
keeps being checked on genuine text; the test that runs real ``sst`` is skipped without it.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from federation.adapters.sst.results import SstOutputError

DATA = Path(__file__).resolve().parent / "data" / "sst"
TINY = DATA / "pingpong-tiny"
SST = shutil.which("sst")


def tiny_config():
    from federation.adapters.sst import build_config
    from federation.pipeline.build import build_network
    from federation.pipeline.load import load_experiment

    point = load_experiment(DATA / "pingpong-tiny.yaml").points[0]
    return point, build_config(point, build_network(point), point.engine.params)


# --------------------------------------------------------------------------- parsers


@pytest.mark.parametrize(("value", "unit", "ps"), [
    ("0", "ns", 0), ("1.54904", "us", 1_549_040), ("837.597", "us", 837_597_000),
    ("12.5", "ps", 13), ("1", "s", 10**12), ("2.5", "ms", 2_500_000_000)])
def test_si_time(value: str, unit: str, ps: int) -> None:
    from federation.adapters.sst.ember_output import si_time_ps

    assert si_time_ps(value, unit) == ps


def test_motif_log_of_a_real_run() -> None:
    """Both ranks log Init (motif 0) and the two PingPong motifs, in ember's format."""
    from federation.adapters.sst.ember_output import parse_motif_log

    recs = parse_motif_log((TINY / "motifs.log").read_text())
    assert sorted((r.rank, r.motif) for r in recs) == [(k, m) for k in (0, 1) for m in (0, 1, 2)]
    assert {r.job for r in recs} == {0}
    assert {r.name for r in recs if r.motif > 0} == {"PingPong"}
    assert {r.name for r in recs if r.motif == 0} == {"Init"}
    for r in recs:
        assert 0 <= r.start_ps <= r.end_ps
        if r.motif == 0:
            assert r.start_ps == 0  # ember never logs motif 0's start: its initial "0 ns"
    by = {(r.rank, r.motif): r for r in recs}
    for k in (0, 1):  # a rank's next motif starts when its previous one ends
        assert by[(k, 2)].start_ps == by[(k, 1)].end_ps


def test_pingpong_lines_agree_with_the_motif_log() -> None:
    """Two independent SST outputs: PingPong's own timer (rank 0, %.3f us) and the engine's
    motif log (six significant digits) give each size's duration within their rounding."""
    from federation.adapters.sst.ember_output import parse_motif_log, parse_pingpong

    lines = parse_pingpong((TINY / "sst.stdout").read_text())
    assert [(p.size, p.iterations, p.other_rank) for p in lines] == [(8, 2, 1), (131072, 2, 1)]
    by = {(r.rank, r.motif): r for r in parse_motif_log((TINY / "motifs.log").read_text())}
    for k, p in enumerate(lines, start=1):
        span_ns = (by[(0, k)].end_ps - by[(0, k)].start_ps) / 1e3
        assert p.total_ns == pytest.approx(span_ns, abs=1.0 + span_ns * 1e-5)
        assert p.latency_ns == pytest.approx(p.total_ns / 2 / p.iterations, abs=0.5)  # %.3f us


@pytest.mark.parametrize(("text", "words"), [
    ("0 0 1 PingPong 0 ns 1.5 us extra", "line 1: expected '<job> <rank>"),
    ("0 0 1 PingPong 0 ns\n", "line 1: expected"),
    ("0 0 1 PingPong 0 ns 1.5 us\n0 1 x PingPong 0 ns 2 us", "line 2: expected"),
    ("0 0 1 PingPong 0 ns 1.5 Ys", "line 1: expected"),
])
def test_motif_log_errors_name_the_line(text: str, words: str) -> None:
    from federation.adapters.sst.ember_output import parse_motif_log

    with pytest.raises(SstOutputError, match="^m.log: " + words):
        parse_motif_log(text, "m.log")


def test_rank_finish_needs_every_motif_of_every_rank() -> None:
    from federation.adapters.sst.ember_output import MotifRecord, rank_finish_ps

    recs = [MotifRecord(0, k, m, "X", 0, 10 * k + m) for k in range(2) for m in range(2)]
    assert rank_finish_ps(recs, 2, 2) == [1, 11]
    with pytest.raises(SstOutputError, match="rank 1 never finished motif 1"):
        rank_finish_ps(recs[:-1], 2, 2)
    with pytest.raises(SstOutputError, match="rank 0 logged motif 0 twice"):
        rank_finish_ps(recs + recs[:1], 2, 2)
    with pytest.raises(SstOutputError, match="outside the job's 1 ranks"):
        rank_finish_ps(recs, 1, 2)
    idle = [MotifRecord(-1, 0, 0, "Null", 0, 5)]  # another job's lines are not this one's
    assert rank_finish_ps(recs + idle, 2, 2) == [1, 11]


def test_no_motif_log(tmp_path: Path) -> None:
    from federation.adapters.sst.ember_output import read_motif_logs

    with pytest.raises(SstOutputError, match="ember wrote no motif log"):
        read_motif_logs(tmp_path)
    (tmp_path / "motifs-1.log").write_text((TINY / "motifs.log").read_text())
    assert len(read_motif_logs(tmp_path)) == 6  # one file per sst MPI rank is read as well


# --------------------------------------------------------------------------- summary


def test_summary_of_the_real_run() -> None:
    """programs from the motif log (completion: the latest end), traffic from merlin's
    statistics over the whole run, latencies that ember does not report left null."""
    from federation.adapters.sst.ember_output import (
        parse_motif_log,
        program_summary,
        summarize_programs,
    )
    from federation.adapters.sst.results import parse_stats_csv, parse_stdout

    _, cfg = tiny_config()
    assert cfg.motifs == 3  # Init + one PingPong per size
    recs = parse_motif_log((TINY / "motifs.log").read_text())
    progs = program_summary(recs, 2, cfg.motifs, operations=16, messages=8)
    ends = {k: max(r.end_ps for r in recs if r.rank == k) for k in (0, 1)}
    assert progs.rank_finish_ns == [ends[0] / 1e3, ends[1] / 1e3]
    assert progs.completion_ns == max(ends.values()) / 1e3
    out = parse_stdout((TINY / "sst.stdout").read_text())
    rows = parse_stats_csv((TINY / "stats.csv").read_text())
    s = summarize_programs(cfg, rows, out, progs)
    assert s.programs == progs
    assert s.simulated_time_ns == pytest.approx(progs.completion_ns)  # the last event
    # every byte the NICs sent reached a NIC: payload (8 x 8 B + 4 x 128 KiB) and firefly's
    # headers and rendezvous control messages on top
    assert s.bytes_injected == s.bytes_delivered > 4 * 8 + 4 * 131072
    assert s.latency_ns.mean is None and s.message_completion_ns_mean is None
    assert s.network_latency_ns.mean > 0 and s.packets_delivered == s.packets_measured


def fake_sst(bindir: Path, source: Path) -> Path:
    """A stand-in ``sst`` that writes the kept real output into its working folder."""
    bindir.mkdir(exist_ok=True)
    prog = bindir / "sst"
    prog.write_text(f"#!{sys.executable}\nimport os, shutil, sys\n"
                    f"if '--version' in sys.argv: sys.exit(0)\n"
                    f"for f in ('motifs.log', 'stats.csv'):\n"
                    f"    if os.path.exists({str(source)!r} + '/' + f):\n"
                    f"        shutil.copy({str(source)!r} + '/' + f, f)\n"
                    f"print(open({str(source / 'sst.stdout')!r}).read())\n")
    prog.chmod(0o755)
    return prog


def test_sst_run_of_a_closed_loop_point(tmp_path: Path) -> None:
    """`federation sst run` end to end on the kept output: results.json with engine sst,
    programs from the motif log, counts of the program our workload builds."""
    import os

    fake_sst(tmp_path / "bin", TINY)
    env = {"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    r = run_cli("sst", "run", str(DATA / "pingpong-tiny.yaml"), "--out", str(tmp_path / "o"),
                cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    (pt,) = json.loads((tmp_path / "o" / "results.json").read_text())["points"]
    assert pt["engine"] == "sst" and pt["files"]["motif_log"] == "sst-0/motifs.log"
    pg = pt["summary"]["programs"]
    assert pg["ranks"] == 2 and pg["operations"] == 16 and pg["messages"] == 8
    assert pg["completion_ns"] == max(pg["rank_finish_ns"]) > 0
    assert (tmp_path / "o" / "sst-0" / "motifs.log").exists()


def test_crossval_runs_sst_through_its_driver(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A native-vs-sst suite: SST runs through `federation sst run`'s driver; a metric that
    needs a per-message table has no SST figure and says so."""
    import yaml

    from federation.crossval.run import SuiteRunner

    fake_sst(tmp_path / "bin", TINY)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{Path(sys.executable).parent}:/usr/bin:/bin")
    exp = yaml.safe_load((DATA / "pingpong-tiny.yaml").read_text())
    exp.pop("engine")
    exp.pop("name")
    suite = {"schema_version": 1, "name": "t", "engines": ["native", "sst"], "scenarios": [
        {"name": "pp", "experiment": exp, "metrics": [
            {"metric": "program_completion_ns", "tolerance": {"relative": 10}},
            {"metric": "makespan_ns", "tolerance": {"relative": 10}}]}]}
    path = tmp_path / "s.crossval.yaml"
    path.write_text(yaml.safe_dump(suite))
    res = SuiteRunner(path).run_all()
    done, makespan = res.checks
    assert done.status == "pass" and done.value > 0 and done.reference > 0
    assert makespan.status == "error" and "does not report this metric" in makespan.reason


def test_sst_version(tmp_path: Path) -> None:
    """The engine origin's program, from what sst 16.0.0 prints for --version; a program that
    does not answer so gives None."""
    from federation.adapters.sst.launch import sst_version

    real = tmp_path / "sst"
    real.write_text(f"#!{sys.executable}\nprint('SST-Core Version (16.0.0, git branch : HEAD, "
                    "SHA: ffd71527bc26a1f2a4fb685fdeb2ca0799997d78)')\n")
    real.chmod(0o755)
    assert sst_version(str(real)) == "SST-Core 16.0.0 (ffd71527bc26)"
    other = tmp_path / "other"
    other.write_text(f"#!{sys.executable}\nprint('hello')\n")
    other.chmod(0o755)
    assert sst_version(str(other)) is None
    assert sst_version(str(tmp_path / "missing")) is None


# --------------------------------------------------------------------------- real sst


@pytest.mark.skipif(SST is None, reason="sst is not on PATH (SST is in no package registry; "
                    "build sst-core and sst-elements outside the repository to run this)")
def test_real_sst_closed_loop(tmp_path: Path) -> None:
    """The fixture's experiment on real sst: the same motif structure, and (the run is
    deterministic) the same completion as the kept output."""
    r = run_cli("sst", "run", str(DATA / "pingpong-tiny.yaml"), "--out", str(tmp_path / "o"),
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (pt,) = json.loads((tmp_path / "o" / "results.json").read_text())["points"]
    from federation.adapters.sst.ember_output import parse_motif_log, rank_finish_ps

    kept = rank_finish_ps(parse_motif_log((TINY / "motifs.log").read_text()), 2, 3)
    assert pt["summary"]["programs"]["rank_finish_ns"] == [k / 1e3 for k in kept]
    assert pt["components"]["engine"]["program"].startswith("SST-Core ")
