"""Runs in several threads of one process (a Dask worker started with ``dask worker``, which
takes a thread per core; a user's own thread pool): each run's results are those it gets
alone.  Every run of one layout calls the same loaded loop, and ctypes lets go of the GIL
for the call, so two runs are inside it at once."""

from __future__ import annotations

import ctypes
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from federation.engine.native_code import NativeLoop

MACHINE = Path(__file__).resolve().parents[1] / "schemas" / "machines" / "quickstart-dragonfly.yaml"

ENTRY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


def test_two_threads_in_one_entry_keep_their_own_arguments_and_results() -> None:
    """A stand-in entry returns its one argument, after waiting inside until the other
    thread's call has written its result too: with one result word per loaded loop, both
    calls returned the second's."""
    both_inside = threading.Barrier(2, timeout=30)

    def entry(result: int, exc: int, desc: int) -> int:  # noqa: ARG001 - the entry's signature
        value = ctypes.cast(desc, ctypes.POINTER(ctypes.c_int64))[0]
        ctypes.cast(result, ctypes.POINTER(ctypes.c_int64))[0] = value
        if value < 100:  # the two calls made at once
            both_inside.wait()
        return 0

    fn = ENTRY(entry)
    loop = NativeLoop(ctypes.cast(fn, ctypes.c_void_p).value, ("tuple", (("int", "int64"),)))
    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(loop, [11, 22]))
    assert got == [11, 22]
    assert loop(333) == 333  # and a later call in this thread sees its own


def _summary(tmp: Path, seed: int) -> dict:
    from federation import load_experiment, run_experiment

    doc = {"machine": str(MACHINE), "routing": "ugal",
           "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.6},
           "stop": {"warmup": "500ns", "measure": "5us"}, "seed": seed,
           "outputs": {"packets": False, "messages": False, "ports": False, "nics": False}}
    path = tmp / f"seed{seed}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return run_experiment(load_experiment(path)).points[0].summary.model_dump()


def test_runs_in_two_threads_give_their_serial_results(tmp_path: Path) -> None:
    """Two adaptive runs at once, the interpreter switching threads every microsecond (so
    that one thread's calls interleave with the other's): each summary equals its run's
    alone, which before each thread had its own descriptor was a RoutingError or another
    run's figures within a few tries."""
    seeds = [1, 2, 3, 4]
    alone = [_summary(tmp_path, s) for s in seeds]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(2) as pool:
            together = list(pool.map(lambda s: _summary(tmp_path, s), seeds))
    finally:
        sys.setswitchinterval(old)
    assert together == alone
