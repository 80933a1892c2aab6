"""Property-based reading of program files: near-valid GOAL schedules and SimGrid TI traces (a
valid one with tokens replaced by junk, lines dropped, doubled, swapped or cut, junk lines put
in) are either accepted by the preflight, and then run on a tiny machine, or refused with the
project's own error (:class:`~federation.errors.FederationError`: one message naming the file).
Never another exception (``OverflowError``, ``MemoryError``, ``IndexError``), never a hang.

Like ``tests/test_loader_fuzz.py``: seeded (``derandomize``), a few hundred examples in CI,
``FEDERATION_FUZZ_EXAMPLES`` multiplies them for a longer search.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from federation.errors import FederationError
from federation.pipeline.load import load_experiment
from federation.pipeline.point import preflight, prepare

SCALE = max(1, int(os.environ.get("FEDERATION_FUZZ_EXAMPLES", "40")) // 40)
LIMIT = 2**31
#: 12 nodes (dragonfly p=2, a=2, h=1)
MACHINE = {"topology": {"kind": "dragonfly", "p": 2, "a": 2, "h": 1}}

GOAL = """num_ranks 3
// a ring with computes /* and comments */
rank 0 {
  l1: send 64b to 1 tag 1
  l2: recv 64b from 2 tag 1
  l3: calc 100
  l2 requires l1; l3 irequires l2
}
rank 1 {
  /* several
     lines */
  a: recv 64b from 0 tag 1
  b: send 64b to 2 tag 1
  c: calc 5 cpu 0
  b requires a
  c requires b
}
rank 2 { x: recv 64b from 1 tag 1; y: send 64b to 0 tag 1; y requires x }
"""

TI = """0 init
1 init
0 compute 1000
0 isend 1 0 16
0 irecv 1 1 16
0 wait 0 1 0
0 waitall
1 recv 0 0 16
1 send 0 1 16 6
1 sleep 0.000001
0 sendRecv 8 1 8 1 6 6
1 sendRecv 8 0 8 0 6 6
0 finalize
1 finalize
"""

JUNK = ["", "-1", "0", "1", "2", "3", "99", "2147483648", "9" * 30, "9" * 5000, "1e22",
        "1e-300", "nan", "inf", "-0", "x", "b", "8b", "64b", "to", "from", "tag", "{", "}",
        "//", "/*", "*/", ";", "requires", "irequires", "calc", "send", "recv", "isend",
        "irecv", "wait", "waitall", "compute", "sleep", "init", "barrier", "l1", "é", "\x00",
        "0x10", "1_000", "1.5", "rank", "num_ranks", "cpu", "nic", "100000000"]
LINES = ["num_ranks 2", "num_ranks 100000000", "rank 0 {", "}", "rank 5 {",
         "l9: send 1b to 0", "l9 requires l1", "l1 requires l1", "/*", "0 recv 1 0 16",
         "1 wait", "2 init", "100000000 init", "0 compute 1e22", "0 sleep 1e15",
         "0 send 1 0 99999999999999", "x y z", "\ufeff", "1 1 1 1 1"]


@st.composite
def mutated(draw, base: str) -> str:
    """``base`` with one to three random edits."""
    lines = base.split("\n")
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.sampled_from(["token", "token", "drop", "double", "swap", "insert",
                                     "cut"]))
        i = draw(st.integers(0, len(lines) - 1)) if lines else 0
        if what == "token" and lines and lines[i].split():
            toks = lines[i].split()
            toks[draw(st.integers(0, len(toks) - 1))] = draw(st.sampled_from(JUNK))
            lines[i] = " ".join(toks)
        elif what == "drop" and lines:
            del lines[i]
        elif what == "double" and lines:
            lines.insert(i, lines[i])
        elif what == "swap" and len(lines) > 1:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif what == "insert":
            lines.insert(i, draw(st.one_of(st.sampled_from(LINES), st.text(max_size=30))))
        elif what == "cut":
            text = "\n".join(lines)
            return text[:draw(st.integers(0, len(text)))]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def experiments(tmp_path_factory) -> dict[str, tuple[Path, object]]:
    tmp = tmp_path_factory.mktemp("fuzz")
    out = {}
    for fmt, name in (("goal", "s.goal"), ("ti", "t.txt")):
        (tmp / name).write_text(GOAL if fmt == "goal" else TI)
        doc = {"schema_version": 1, "machine": MACHINE,
               "workload": {"kind": "program", "path": name}}
        (tmp / f"{fmt}.yaml").write_text(yaml.safe_dump(doc))
        out[fmt] = (tmp / name, load_experiment(tmp / f"{fmt}.yaml"))
    return out


def accepted_or_refused(path: Path, loaded, text: str) -> str:
    """Write ``text``, preflight it, run it if accepted and small; the outcome's kind."""
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    t0 = time.perf_counter()
    try:
        cache = preflight(loaded, LIMIT)
    except FederationError as exc:
        assert str(exc).startswith((str(path), str(loaded.source))), str(exc)
        assert "\n" not in str(exc).strip()
        return "refused"
    finally:
        assert time.perf_counter() - t0 < 20
    point = loaded.points[0]
    prep = prepare(point, cache)
    progs = prep.job.programs.programs
    if int(progs.op_bytes.sum()) > 2**20 or int(progs.op_time_ps.sum()) > 10**9:
        return "accepted (not run: large)"
    try:
        point.engine.run(prep.job)
    except FederationError:  # e.g. stuck where the pairs depend on timing: reported
        return "ran: refused by the engine"
    return "ran"


def test_the_base_files_run(experiments):
    for path, loaded in experiments.values():
        assert accepted_or_refused(path, loaded, path.read_text()) == "ran"


@settings(max_examples=150 * SCALE, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=mutated(GOAL))
def test_near_valid_goal_files_are_accepted_or_refused(experiments, text):
    path, loaded = experiments["goal"]
    event(accepted_or_refused(path, loaded, text))


@settings(max_examples=150 * SCALE, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=mutated(TI))
def test_near_valid_ti_traces_are_accepted_or_refused(experiments, text):
    path, loaded = experiments["ti"]
    event(accepted_or_refused(path, loaded, text))


def test_junk_bytes_are_refused(experiments, tmp_path):
    """Not UTF-8, or one endless line: refused with the line, not read whole."""
    for fmt in ("goal", "ti"):
        path, loaded = experiments[fmt]
        path.write_bytes(b"num_ranks 2\n\xff\xfe\x00 junk\n")
        with pytest.raises(FederationError, match="not UTF-8 text"):
            preflight(loaded, LIMIT)
        path.write_bytes(np.zeros(3 << 20, dtype=np.uint8).tobytes())
        with pytest.raises(FederationError, match="longer than 1,048,576 characters"):
            preflight(loaded, LIMIT)
        path.write_text(GOAL if fmt == "goal" else TI)
