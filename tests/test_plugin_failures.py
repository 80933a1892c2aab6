"""A third-party plugin that raises, or hands back what the engine cannot take, ends the
command with one line naming the plugin (docs/plugins.md, "Errors"), never a traceback:
exceptions from ``Workload.generate`` and ``Topology.build`` were tracebacks with exit 1, a
pattern's short or out-of-range answer an ``IndexError`` or a refusal blamed on the built-in
``synthetic`` workload, integer-valued float node numbers an ``IndexError`` in the engine.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import fake_distribution, one_error
from test_compiled_plugins import cli

SOURCE = '''
import numpy as np
import federation
from federation import Params, TrafficPattern, Workload, hookimpl
from federation.plugin.components import Messages


class Boom(Workload):
    name = "boom"

    class Params(Params):
        fault: str = "raise"

    def generate(self, ctx):
        if self.params.fault == "raise":
            return 1 / 0
        n = 4
        return Messages(time_ps=np.arange(n, dtype=np.int64), src=np.zeros(n),
                        dst=np.ones(n), size=np.full(n, 64, dtype=np.int64))


class Skew(TrafficPattern):
    name = "skew"

    class Params(Params):
        fault: str = "short"

    def destinations(self, src, ctx, rng):
        if self.params.fault == "short":
            return np.zeros(max(0, src.shape[0] - 1), dtype=np.int64)
        return np.full(src.shape[0], ctx.n_nodes + 5, dtype=np.int64)


class Drip(Workload):
    """Two batches of messages; the second names a node the machine lacks."""
    name = "drip"

    def offered_load(self):
        return 0.1

    def batches(self, ctx, target_packets):
        for k, dst in enumerate((1, 99)):
            t = np.array([k * 100_000], dtype=np.int64)
            yield (k + 1) * 100_000, Messages(time_ps=t, src=np.zeros(1, dtype=np.int32),
                                              dst=np.array([dst], dtype=np.int32),
                                              size=np.full(1, 64, dtype=np.int64))


@hookimpl
def federation_register_workloads(register):
    register(Boom)
    register(Drip)


@hookimpl
def federation_register_patterns(register):
    register(Skew)
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return fake_distribution(tmp_path_factory.mktemp("boom") / "site", "boom", SOURCE)


@pytest.mark.parametrize(("workload", "line"), [
    ("{kind: boom}", "error: plugin 'boom' failed: ZeroDivisionError: division by zero (at "),
    ("{kind: boom, fault: floats}", "error: e.yaml: workload: workload 'boom' returned source "
     "nodes of type float64, not integers"),
    # found while the run draws its second batch: the file was named twice
    ("{kind: drip}", "error: e.yaml: workload: workload 'drip' returned message 0 with "
     "destination node 99; the machine has nodes 0 to 3"),
    ("{kind: synthetic, load: 0.5, pattern: skew}", "error: e.yaml: workload.pattern: pattern "
     "'skew' returned "),
    ("{kind: synthetic, load: 0.5, pattern: {kind: skew, fault: far}}", "error: e.yaml: "
     "workload.pattern: pattern 'skew' returned destination node 9; the job has nodes 0 to 3"),
])
def test_a_failing_plugin_is_one_line(site, tmp_path, workload, line):
    (tmp_path / "e.yaml").write_text(textwrap.dedent(f"""
        machine: {{topology: {{kind: torus, dims: [4]}}}}
        workload: {workload}
        stop: {{warmup: 0ns, measure: 1us}}
        """))
    r = cli("run", "e.yaml", "--out", "o", sites=[site], cwd=tmp_path)
    got = one_error(r)
    assert r.returncode == 2 and got.startswith(line), got
    if "(at " in line:
        assert got.endswith("federation_boom.py:16)"), got
    if line.endswith("returned "):
        assert " destinations of type int64 for " in got, got
    assert not (tmp_path / "o").exists()
