"""The cache of compiled loops (federation.engine.native_code): processes that compile the same
loop at once on a cold cache (``pytest -n 2`` on a fresh clone) each get working code, and
what is left in the cache loads."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import numpy as np
    from numba import njit
    import federation.engine.native_code as nc

    folder, me, other, extra = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    for i in range(extra):  # numba numbers the functions it makes: the symbols differ
        njit(lambda: 0)()
    args = (np.arange(5, dtype=np.int64), np.int64(3))

    def make():
        # both processes compile: each waits for the other to get here (a cold cache)
        (folder / me).touch()
        while other != "-" and not (folder / other).exists():
            time.sleep(0.01)
        f = njit(lambda a, k: a.sum() * k)
        f(*args)
        return f

    loop = nc.native_loop(folder, ["test-loop"], nc.layout_of(args), make)
    print(loop(*args))
""")


def _start(*argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SCRIPT, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_two_processes_compiling_one_loop_at_once(tmp_path):
    """Each compiles (different symbols), one publishes its folder, the other uses its own
    code; before, files published one by one could pair one's library with the other's
    symbol ("undefined symbol": a failed test in a cold ``pytest -n 2``)."""
    a = _start(str(tmp_path), "a", "b", "1")
    b = _start(str(tmp_path), "b", "a", "2")
    for p in (a, b):
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        assert out.split() == ["30"]
    stored = [p.name for p in tmp_path.iterdir() if p.is_dir()]
    assert len(stored) == 1 and stored[0].startswith("native_")  # no private folder left
    c = _start(str(tmp_path), "c", "-", "0")  # a later process loads it, compiling nothing
    out, err = c.communicate(timeout=300)
    assert c.returncode == 0, err[-2000:]
    assert out.split() == ["30"]
    assert not (tmp_path / "c").exists()  # make() was not called
