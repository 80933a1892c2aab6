"""Shared fixtures.  Tests never auto-load third-party plugins installed on the machine."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from cli_fork import run_forked

os.environ.setdefault("FEDERATION_DISABLE_PLUGIN_AUTOLOAD", "1")

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def plugins():
    """A freshly loaded plugin manager (built-ins only)."""
    from federation.plugin.registry import FederationPlugins

    return FederationPlugins()


@pytest.fixture
def write(tmp_path):
    """Write a text file under tmp_path and return its path: write('m.yaml', text)."""

    def _write(name: str, text: str) -> Path:
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return p

    return _write


def simulate(tmp_path: Path, doc: dict, name: str = "exp.yaml", deadlock_check: bool = True):
    """Run the single point of an experiment given as a mapping (``deadlock_check`` false:
    as ``--no-deadlock-check``).

    Returns ``(prepared, raw, summary, packets, ports)`` with the per-packet and per-port tables
    as dicts of arrays (what the runner writes to Parquet).
    """
    import yaml

    from federation.pipeline.bounds import default_max_memory
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import BuildCache, prepare
    from federation.pipeline.summary import summarize

    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    loaded = load_experiment(path)
    assert len(loaded.points) == 1
    point = loaded.points[0]
    prep = prepare(point, BuildCache(default_max_memory(), deadlock_check))
    raw = point.engine.run(prep.job)
    summary, packets, ports = summarize(prep, raw)
    return prep, raw, summary, packets, ports


def zero_load_bound_ps(prep, packets: dict) -> np.ndarray:
    """Per packet, a lower bound on its latency (ps) from its measured hop count alone.

    Store-and-forward on an idle path: the NIC and the terminal link to the destination each
    serialise the packet, both terminal latencies, ``hops`` cable links on the fastest cable
    class (serialisation plus latency), and ``hops + 1`` router delays.  The engine rounds each
    serialisation and latency to a picosecond, so each term may lose up to half of one: the
    bound is lowered by one picosecond per term (``hops + 3``) to stay a bound.  Shared by the
    property-based runs and the shipped-machine runs.
    """
    from federation.models.units import PS_PER_S

    job = prep.job
    size = packets["size"].astype(np.float64)
    hops = packets["hops"].astype(np.float64)
    term = job.links["terminal"]
    cable = [f for c, f in job.links.items() if c != "terminal"]
    per_hop = (np.min([size / f.bandwidth + f.latency for f in cable], axis=0) if cable
               else np.zeros_like(size))
    s = (size / job.nic_bandwidth + size / term.bandwidth + 2 * term.latency
         + hops * per_hop + (hops + 1) * job.router_delay_s)
    return np.floor(s * PS_PER_S) - (hops + 3)


@pytest.fixture
def sim(tmp_path):
    """``sim(doc)`` runs an experiment mapping (see :func:`simulate`)."""
    counter = iter(range(10**6))
    return lambda doc: simulate(tmp_path, doc, name=f"exp{next(counter)}.yaml")


@pytest.fixture
def spool_dir(tmp_path, monkeypatch):
    """A folder of its own as the temporary folder (``tempfile``'s), where runs spool their
    per-packet and per-message tables: a test can see what is left in it."""
    import tempfile

    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def pip_build_flags() -> list[str]:
    """Build with this venv's setuptools when it can make wheels by itself (fast, no network).
    A fresh Python 3.11 venv has setuptools 65 without ``wheel``; then pip fetches the build
    backend into an isolated environment instead."""
    from packaging.version import Version

    try:
        st = Version(metadata.version("setuptools"))
    except metadata.PackageNotFoundError:
        return []
    try:
        metadata.version("wheel")
        has_wheel = True
    except metadata.PackageNotFoundError:
        has_wheel = False
    if st >= Version("70.1") or (st >= Version("68") and has_wheel):
        return ["--no-build-isolation", "--no-index"]
    return []


def run_cli(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``federation ARGS`` in a child process (the exit code and streams a user sees): forked
    from a process that imported the CLI where the environment allows (:mod:`cli_fork`)."""
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1", **(env or {})}
    done = run_forked([str(a) for a in args], cwd, env, 300)
    if done is not None:
        return done
    return subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                           *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def one_error(r: subprocess.CompletedProcess) -> str:
    """The refusal a user must get: exit 2, nothing on stdout, one ``error:`` line, no
    traceback; returns that line."""
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


def refused_alike(tmp_path: Path, text: str) -> str:
    """``validate`` refuses experiment ``text`` with one line, and ``run`` with the same line,
    writing nothing: a refusal made before the run is the run's own."""
    (tmp_path / "e.yaml").write_text(text)
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert one_error(run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path)) == line
    assert not (tmp_path / "o").exists()
    return line


@pytest.fixture
def ring_growth(monkeypatch) -> list[int]:
    """The slots per ring after each growth of a sliding window's rings in the runs of the
    test (``native.grow_rings`` recorded)."""
    import federation.engine.native as native

    grow = native.grow_rings
    slots: list[int] = []

    def recorded(st):  # noqa: ANN001, ANN202
        out = grow(st)
        slots.append(int(out.ring_k[0]))
        return out

    monkeypatch.setattr(native, "grow_rings", recorded)
    return slots


def fake_distribution(site: Path, name: str, source: str) -> Path:
    """An installed distribution ``federation-NAME`` whose entry point ``NAME`` (group
    ``federation``) names the module ``federation_NAME`` holding ``source``: what pip would leave
    in ``site``, minus RECORD.  Returns ``site``."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"federation_{name}.py").write_text(source)
    info = site / f"federation_{name}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: federation-{name}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[federation]\n{name} = federation_{name}\n")
    return site


@pytest.fixture
def sigint_default():
    """Ctrl-C as Python's default (``KeyboardInterrupt``) for a test that sends itself SIGINT:
    a suite started in the background by a non-interactive shell inherits SIGINT ignored, which
    Python and :mod:`federation.interrupts` both respect (a fresh-clone ``.ci/run`` launched
    that way failed the two tests that use this)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield  # handlers are installed from the main thread only
        return
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def from_almost_nothing(monkeypatch: pytest.MonkeyPatch, records: int = 16) -> None:
    """Every store of the engine's next runs (the event queue, the packet rows, the credit
    returns, the records) starts with (almost) no spare room: for tests that the loop keeps
    room for what an event adds and the driver grows each store.  The records get ``records``
    rows (16: the driver folds a full buffer on the feeder's thread and hands back one as
    large, so a row or two would make the run crawl; a test about the other stores gives
    more, each fold costing a hand-over between threads)."""
    from federation.engine import native, program_arrays
    from federation.engine.queue import Q_SHIFT, Q_SIDE, new_queue

    initial_state, row_pool = native._initial_state, program_arrays.row_pool

    def smallest_state(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        sim = initial_state(*args, **kwargs)
        q = sim.q
        n0 = int(q.qs[Q_SIDE])  # rank programs' first operations, due at time 0
        small = new_queue(int(q.qs[Q_SHIFT]), blocks=1, heap=n0 + 1, run=1)
        small.sk[:n0], small.sp[:n0] = q.sk[:n0], q.sp[:n0]
        small.qs[Q_SIDE] = n0
        cr, cr_free = native.credit_pool(1)
        sim.sc[native.E.S_CRFREE] = 1
        return sim._replace(q=small, cr=cr, cr_free=cr_free,
                            rec=np.zeros((records, sim.rec.shape[1]), dtype=np.int64))

    def smallest_pool(n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
        row_flow, _ = row_pool(n_nodes)
        return row_flow[:1], np.zeros(1, dtype=np.int64)

    monkeypatch.setattr(native, "_initial_state", smallest_state)
    monkeypatch.setattr(program_arrays, "row_pool", smallest_pool)


def validated(path: Path, overrides: list[str] | None = None):  # noqa: ANN201
    """``federation validate`` in process: the loaded experiment after its preflight."""
    from federation.pipeline.bounds import default_max_memory
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import preflight

    loaded = load_experiment(path, overrides)
    preflight(loaded, default_max_memory())
    return loaded
