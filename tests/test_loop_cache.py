"""The cache of compiled loops (federation.engine.native_code): processes that need the same
loop at once on a cold cache (``pytest -n 2`` on a fresh clone) compile it once, the other
waiting for it; where they cannot lock, each gets working code; what is left in the cache
loads."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import contextlib, sys, time
    from pathlib import Path
    import numpy as np
    from numba import njit
    import federation.engine.native_code as nc

    folder, me, other, extra = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    locked = sys.argv[5] == "lock"
    if not locked:  # a file system that cannot lock
        nc._compiling = lambda folder, key: contextlib.nullcontext()
    for i in range(extra):  # numba numbers the functions it makes: the symbols differ
        njit(lambda: 0)()
    args = (np.arange(5, dtype=np.int64), np.int64(3))

    def make():
        (folder / me).touch()
        if other != "-":  # a cold cache: the other process is there too
            wait = other if not locked else other + ".started"
            while not (folder / wait).exists():
                time.sleep(0.01)
            if locked:
                time.sleep(0.5)  # the other is now waiting for the lock
        f = njit(lambda a, k: a.sum() * k)
        f(*args)
        return f

    (folder / (me + ".started")).touch()
    loop = nc.native_loop(folder, ["test-loop"], nc.layout_of(args), make)
    print(loop(*args))
""")


def _start(*argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SCRIPT, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _both(tmp_path, lock: str) -> None:
    a = _start(str(tmp_path), "a", "b", "1", lock)
    b = _start(str(tmp_path), "b", "a", "2", lock)
    for p in (a, b):
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        assert out.split() == ["30"]
    stored = [p.name for p in tmp_path.iterdir() if p.is_dir()]
    assert len(stored) == 1 and stored[0].startswith("native_")  # no private folder left


def test_two_processes_needing_one_loop_at_once_compile_it_once(tmp_path):
    """The second waits for the first's lock and loads what it published: one compilation
    (two, before: a core spent on the same 10-30 s for every loop both workers of a cold
    ``pytest -n 2`` needed)."""
    _both(tmp_path, "lock")
    made = [n for n in ("a", "b") if (tmp_path / n).exists()]
    assert len(made) == 1


def test_two_processes_that_cannot_lock_each_compile_and_both_work(tmp_path):
    """Each compiles (different symbols), one publishes its folder, the other uses its own
    code; files published one by one could pair one's library with the other's symbol
    ("undefined symbol": a failed test in a cold ``pytest -n 2``)."""
    _both(tmp_path, "nolock")
    assert (tmp_path / "a").exists() and (tmp_path / "b").exists()
    c = _start(str(tmp_path), "c", "-", "0", "lock")  # a later process loads it, compiling nothing
    out, err = c.communicate(timeout=300)
    assert c.returncode == 0, err[-2000:]
    assert out.split() == ["30"]
    assert not (tmp_path / "c").exists()  # make() was not called


def test_the_loop_is_made_for_numbas_processor_setting(monkeypatch):
    """The loop's object code follows numba's ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` as
    numba reads them (``generic`` alone: no features, code valgrind can run), and the setting
    is part of the cache key, so a generic build is never loaded for the host's or back."""
    from federation.engine import native_code

    def key() -> str:
        native_code.host.cache_clear()
        return native_code.host()

    monkeypatch.delenv("NUMBA_CPU_NAME", raising=False)
    monkeypatch.delenv("NUMBA_CPU_FEATURES", raising=False)
    try:
        assert native_code.target_cpu() == (None, None)
        own = key()
        monkeypatch.setenv("NUMBA_CPU_NAME", "generic")
        assert native_code.target_cpu() == ("generic", "")
        generic = key()
        monkeypatch.setenv("NUMBA_CPU_NAME", "znver3")
        monkeypatch.setenv("NUMBA_CPU_FEATURES", "+avx2")
        assert native_code.target_cpu() == ("znver3", "+avx2")
        assert len({own, generic, key()}) == 3
    finally:
        native_code.host.cache_clear()
