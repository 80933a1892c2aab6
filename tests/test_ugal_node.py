"""``ugal`` with ``intermediate: node`` (BookSim2's UGAL): its declared VC plan, the deadlock
proof's refusal of it, and a run with the proof off."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import one_error, run_cli, simulate

MACHINE = str(Path(__file__).resolve().parents[1] / "schemas" / "machines"
              / "quickstart-dragonfly.yaml")


def doc(pattern: str = "group_shift") -> dict:
    return {"machine": MACHINE,
            "routing": {"algorithm": "ugal", "intermediate": "node", "decide": "injection"},
            "workload": {"kind": "synthetic", "pattern": pattern, "load": 0.3},
            "stop": {"warmup": "0.5us", "measure": "2us"}, "seed": 5}


def test_validate_refuses_it_with_the_cycle_through_local_vc_0(tmp_path: Path) -> None:
    """BookSim's VC = phase: packets on their way to an intermediate and packets leaving
    their source group share local VC 0, so local 0 -> global 0 -> local 0 is a cycle."""
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc()))
    r = run_cli("validate", "e.yaml", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "routing 'ugal' (plugin ugal) can deadlock" in r.stderr
    assert "declared class transitions" in r.stderr and "--no-deadlock-check" in r.stderr
    assert "(local to router" in r.stderr and "(global to router" in r.stderr
    assert " VC 1" not in r.stderr and " VC 2" not in r.stderr  # the cycle is all VC 0
    r = run_cli("validate", "e.yaml", "--no-deadlock-check", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_it_runs_with_the_proof_off_and_delivers_every_packet(tmp_path: Path) -> None:
    """Worst-case traffic: a share of packets detours through a random node's router (hops
    above the minimal path's at most 3), every measured packet arrives."""
    _, _, s, packets, _ = simulate(tmp_path, doc(), deadlock_check=False)
    m = packets["measured"]
    assert m.sum() == s.packets_measured > 0
    assert (packets["delivered_ps"][m] >= 0).all()
    assert 0 < s.nonminimal_fraction < 1
    assert packets["hops"][m].max() <= 3 + 3 + 1  # to the intermediate, then minimal


def test_a_network_without_local_and_global_links_is_refused_naming_the_option(
        tmp_path: Path) -> None:
    """Its VC = phase counts the dragonfly's local and global hops: on a ring (one link class,
    every hop bumping) it has no meaning, proof or not.  It was refused as the plugin's own
    fault ("declared an unusable VC plan"), and run, unproved, with the proof off."""
    d = {**doc("uniform"), "machine": {"topology": {"kind": "circulant", "n": 8, "jumps": [1]}}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(d))
    for extra in ((), ("--no-deadlock-check",)):
        line = one_error(run_cli("validate", "e.yaml", *extra, cwd=tmp_path))
        assert "e.yaml: routing: routing 'ugal' with intermediate: node" in line
        assert "no global or local links (it has: terminal, network)" in line
        assert "use intermediate: group" in line
