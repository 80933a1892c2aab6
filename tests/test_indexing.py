"""The engine's compiled code indexes without numpy's wrap-around, and only its own code
(federation.engine.indexing)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from federation.engine import indexing

PROBE = textwrap.dedent("""
    import numpy as np
    from numba import njit
    from federation.engine import indexing
    assert indexing.install()
    def pick(a, i):
        return a[i]
    pick.__module__ = "federation.engine.probe"  # what numba names the code after
    f = njit(cache=False)(pick)
    a = np.arange(5) * 10
    print(f(a, 3), flush=True)
    f(a, -1)
    print("no trap", flush=True)
""")


@pytest.mark.parametrize(("name", "ours"), [
    ("_ZN10federation6engine6events4pushB3v70B66c8", True),  # federation.engine.events.push
    ("_ZN10federation7plugins7routing3ugal5routeB2", True),  # a built-in plugin
    ("_ZN36federation_loop_61d0d19212dc9a87eaff8run_loopB2", True),  # a generated loop
    ("_ZN11federationx6routes5routeB2", False),  # another package whose name starts alike
    ("_ZN8myplugin5routeB2v2", False),  # a third-party routing
    ("_ZN5tests13test_indexing4pickB2", False),
])
def test_which_code_is_ours(name: str, ours: bool) -> None:
    assert indexing.ours(name) is ours


def test_other_code_keeps_numpys_negative_indices() -> None:
    from numba import njit

    assert indexing.install()

    def pick(a: np.ndarray, i: int) -> int:
        return a[i]

    f = njit(cache=False)(pick)
    a = np.arange(5) * 10
    assert f(a, -1) == 40
    assert f(a, -5) == 0
    assert f(a, 2) == 20


def test_check_mode_traps_a_negative_index_in_our_code() -> None:
    env = dict(os.environ, FEDERATION_INDEX_CHECK="1")
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.stdout.splitlines()[0] == "30"
    assert "no trap" not in done.stdout
    assert done.returncode == -4  # SIGILL: llvm.trap


def test_check_mode_is_part_of_the_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    from federation.engine import jit

    jit.engine_digest.cache_clear()
    try:
        monkeypatch.delenv("FEDERATION_INDEX_CHECK", raising=False)
        plain = jit.engine_digest()
        jit.engine_digest.cache_clear()
        monkeypatch.setenv("FEDERATION_INDEX_CHECK", "1")
        assert jit.engine_digest() != plain
    finally:
        jit.engine_digest.cache_clear()
