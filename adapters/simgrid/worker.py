"""The SimGrid side of the adapter, run as its own process: ``python -m
federation.adapters.simgrid.worker FOLDER``.

Why a process of its own: SimGrid allows one engine per process (a sweep or a validation
suite runs many), it prints its configuration lines on import, and its fatal errors abort the
process; in a child none of that reaches the caller.  The folder holds what
:mod:`federation.adapters.simgrid.engine` wrote:

* ``platform.xml`` (:mod:`.platform`),
* ``messages.npz``: ``time_ps``, ``src``, ``dst``, ``size`` (int64 arrays, one row per message),
* ``config.json``: ``{"cfg": ["network/model:CM02", ...], "precision": seconds}`` (the time
  precision's option name depends on the SimGrid version);
* or, for rank programs, ``programs.npz`` and ``program-figures.json`` instead of the
  messages: :mod:`.ranks` runs one actor per rank and writes ``program-result.npz``.

Each node that sends gets one actor that sleeps until each of its messages' creation time and
starts it (``put_async`` on the message's own mailbox, ``m<index>``); each node that receives
gets one actor that posts a ``get_async`` for every message addressed to it at time 0, so a
transfer starts exactly when it is created.  The worker writes ``result.npz`` (``start_s`` and
``finish_s`` per message, SimGrid's own timestamps) and ``result.json`` (SimGrid version, final
clock).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from federation.adapters.simgrid.locate import import_simgrid


def _sender(sg: Any, times: list[float], index: list[int], sizes: list[int]) -> None:
    """Start each message at its creation time, then wait for all of them."""
    comms = []
    for t, i, s in zip(times, index, sizes, strict=True):
        if t > sg.Engine.clock:
            sg.this_actor.sleep_until(t)
        comms.append(sg.Mailbox.by_name(f"m{i}").put_async(i, s))
    sg.Comm.wait_all(comms)


def _comm(posted: Any) -> Any:
    """The Comm of a ``get_async``: SimGrid 3.32 returns ``(comm, payload holder)``."""
    return posted[0] if isinstance(posted, tuple) else posted


def _receiver(sg: Any, index: list[int], start: np.ndarray, finish: np.ndarray) -> None:
    """Post every receive at once; record when each transfer started and finished.

    ``posted`` keeps what ``get_async`` returned alive until the transfers are done: in 3.32
    the payload holder is where SimGrid writes the received object, and freeing it early
    corrupts memory (a crash at the end of the run)."""
    posted = [sg.Mailbox.by_name(f"m{i}").get_async() for i in index]
    comms = [_comm(p) for p in posted]
    sg.Comm.wait_all(comms)
    for i, comm in zip(index, comms, strict=True):
        start[i] = comm.start_time
        finish[i] = comm.finish_time
    del posted


def _precision_option(version: str, precision: float) -> str:
    """SimGrid's time precision option (renamed in SimGrid 4)."""
    key = "surf/precision" if version.startswith("3.") else "precision/timing"
    return f"{key}:{precision!r}"


def simulate(folder: Path) -> None:
    """Run the messages of ``folder`` on its platform and write the results beside them."""
    sg = import_simgrid()
    version = str(sg.simgrid_version)
    config = json.loads((folder / "config.json").read_text())
    cfg = [*config["cfg"], _precision_option(version, config["precision"])]
    args = ["federation-simgrid", "--log=root.thresh:warning", *(f"--cfg={c}" for c in cfg)]
    engine = sg.Engine(args)
    engine.load_platform(str(folder / "platform.xml"))
    if (folder / "programs.npz").is_file():  # rank programs: one actor per rank
        from federation.adapters.simgrid.ranks import simulate as run_ranks

        info = run_ranks(sg, engine, folder)
        (folder / "result.json").write_text(json.dumps(
            {"version": version, "clock_s": float(sg.Engine.clock), **info}))
        return
    m = np.load(folder / "messages.npz")
    time_s = m["time_ps"].astype(np.float64) / 1e12
    src, dst, size = m["src"], m["dst"], m["size"]
    n = int(time_s.shape[0])
    start = np.full(n, -1.0)
    finish = np.full(n, -1.0)
    order = np.lexsort((np.arange(n), time_s))
    for node in np.unique(src).tolist():
        mine = order[src[order] == node]
        sg.Actor.create(f"send-n{node}", sg.Host.by_name(f"n{node}"), _sender, sg,
                        time_s[mine].tolist(), mine.tolist(), size[mine].tolist())
    for node in np.unique(dst).tolist():
        mine = np.nonzero(dst == node)[0]
        sg.Actor.create(f"recv-n{node}", sg.Host.by_name(f"n{node}"), _receiver, sg,
                        mine.tolist(), start, finish)
    engine.run()
    np.savez(folder / "result.npz", start_s=start, finish_s=finish)
    (folder / "result.json").write_text(json.dumps(
        {"version": version, "clock_s": float(sg.Engine.clock)}))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m federation.adapters.simgrid.worker FOLDER", file=sys.stderr)
        return 2
    simulate(Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
