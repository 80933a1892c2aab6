"""Rank programs as SimGrid actors (worker side; run by :mod:`.worker` in its child process).

One actor per rank, on host ``n<rank_node[r]>``, runs that rank's operation graph with the
native engine's semantics (:mod:`federation.engine.programs`): an operation begins when its
dependencies are met, beginning releases its START successors, finishing its FINISH ones, and
operations that become ready together begin in operation order.  The actor is an event loop:
it begins what is ready, then blocks in ``Comm.wait_any_for`` on its pending receives (and its
control mailbox) with a timeout at its next timer, and acts on whichever comes first.

* **compute**: a timer of ``op_time_ps`` (``sleep``-like, not ``exec``): a program gives a
  duration, not flops, and the native engine runs it as such; one compute at a time per rank,
  in the order they began (a FIFO, as the native CPU).
* **matching**: the k-th send started on channel (source, destination, tag) and the k-th
  receive posted on it meet on mailbox ``d<channel>.<k>``.  Every send of a channel is on its
  source rank and every receive on its destination rank, so two counters give exactly MPI's
  non-overtaking order (one mailbox per message: SimGrid's FIFO per channel mailbox would give
  the same pairs, but a rendezvous put waits for its reply and could be reordered there).
* **eager** (size up to the threshold): at hand-over (start + ``o_send``) the data is put on
  the message's mailbox with the receiving actor as its *permanent receiver*, so SimGrid starts
  the transfer at once and an early arrival waits in the mailbox for its receive.
* **rendezvous**: a request of ``control_bytes`` goes (eagerly) to the receiver's control
  mailbox ``ctl<rank>``; once it arrived *and* the receive is posted, a reply of
  ``control_bytes`` goes back; its arrival puts the data (the receive is posted, so it starts).
* a **send finishes** when its data would have left the NIC: the time the data is handed to the
  network (eager: hand-over; rendezvous: the reply's arrival) plus ``bytes / NIC bandwidth``,
  after the node's earlier sends (a FIFO per node).  A flow model has no NIC queue, so this is
  the native engine's figure on an unloaded NIC.
* a **receive finishes** ``o_recv`` after its data arrived, or after it was posted if the
  data came first.

Times are kept in integer picoseconds: timers fire at their exact value; communication events
at SimGrid's clock, rounded.  Everything is written to ``program-result.npz``; operations that
never finished stay -1 (SimGrid reports the deadlock and returns; the adapter names them).
"""

from __future__ import annotations

import heapq
import json
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

SEND, RECV, COMPUTE = 0, 1, 2
DEP_FINISH, DEP_START = 0, 1
T_FINISH, T_HAND = 0, 1  # timer kinds
W_DATA, W_CTL = 0, 1  # what a pending receive is


class Shared:
    """What all rank actors share: the program arrays, the matching slots and the records
    (actors run one at a time, so plain arrays need no locking)."""

    def __init__(self, sg: Any, a: dict[str, np.ndarray], fig: dict[str, Any]) -> None:
        self.sg = sg
        self.a = {k: v.tolist() for k, v in a.items()}  # Python ints: fast scalar access
        self.o_send = int(fig["o_send_ps"])
        self.o_recv = int(fig["o_recv_ps"])
        self.ctl = int(fig["control_bytes"])
        self.ps_per_byte = 1e12 / float(fig["nic_bandwidth"])
        n_ops, n_msg = len(self.a["op_kind"]), len(self.a["msg_size"])
        n_slots = self.a["chan_first"][-1]
        self.wait = list(self.a["op_wait"])
        self.nsend = [0] * (len(self.a["chan_first"]) - 1)
        self.nrecv = list(self.nsend)
        self.slot_msg = [-1] * n_slots
        self.slot_recv = [-1] * n_slots
        self.rts_in = [False] * n_slots  # a request arrived before its receive was posted
        self.msg_k = [-1] * n_msg
        self.nic_free = [0] * (max(self.a["rank_node"]) + 1 if self.a["rank_node"] else 1)
        self.actors: list[Any] = []
        self.comms = 0
        self.rec = {k: np.full(n, -1, dtype=np.int64) for k, n in (
            ("op_start", n_ops), ("op_finish", n_ops), ("op_msg", n_ops),
            ("msg_recv", n_msg), ("msg_post", n_msg), ("msg_queued", n_msg),
            ("msg_start", n_msg), ("msg_finish", n_msg), ("rts_sent", n_msg),
            ("rts_arrived", n_msg), ("cts_sent", n_msg), ("cts_arrived", n_msg))}
        self.rec["op_msg"][:] = np.asarray(a["op_msg"])
        self.rank_finish = np.full(len(self.a["rank_first"]) - 1, -1, dtype=np.int64)

    def now(self) -> int:
        return int(round(self.sg.Engine.clock * 1e12))


class Rank:
    """One rank's event loop (see the module docstring)."""

    def __init__(self, sh: Shared, r: int) -> None:
        self.sh, self.r, self.sg = sh, r, sh.sg
        a = sh.a
        first, last = a["rank_first"][r], a["rank_first"][r + 1]
        self.left = last - first
        self.ready = deque(op for op in range(first, last) if sh.wait[op] == 0)
        self.timers: list[tuple[int, int, int, int]] = []  # (ps, seq, kind, op)
        self.seq = 0
        self.pending: list[tuple[Any, int, int, Any]] = []  # (comm, what, op/slot, holder)
        self.kept: list[Any] = []  # this rank's puts, alive until they are done
        self.cpu_busy = False
        self.cpu_queue: deque[int] = deque()

    # ---------------------------------------------------------------- the loop
    def run(self) -> None:
        sg = self.sg
        self.post_ctl()
        while True:
            self.settle()
            if self.left == 0:
                break
            comms = [p[0] for p in self.pending]
            t = self.timers[0][0] if self.timers else None
            if t is None:
                i = sg.Comm.wait_any(comms)
            else:
                wait_s = t / 1e12 - sg.Engine.clock
                i = sg.Comm.wait_any_for(comms, wait_s) if wait_s > 0 else -1
            if i < 0:
                _, _, kind, op = heapq.heappop(self.timers)
                self.fire(kind, op, t)
            else:
                self.completed(self.pending.pop(i))
        self.sh.rank_finish[self.r] = int(max(self.sh.rec["op_finish"][
            self.sh.a["rank_first"][self.r]:self.sh.a["rank_first"][self.r + 1]], default=0))
        for comm, what, _, _ in self.pending:
            if what == W_CTL:
                comm.cancel()
        self.pending.clear()
        sg.Comm.wait_all(self.kept)

    def settle(self) -> None:
        """Begin what is ready and fire the timers that are due, until neither is left."""
        now = self.sh.now()
        while True:
            if self.ready:
                self.begin(self.ready.popleft(), now)
            elif self.timers and self.timers[0][0] <= now:
                _, _, kind, op = heapq.heappop(self.timers)
                self.fire(kind, op, now)
            else:
                return

    def timer(self, t: int, kind: int, op: int) -> None:
        heapq.heappush(self.timers, (t, self.seq, kind, op))
        self.seq += 1

    def fire(self, kind: int, op: int, t: int) -> None:
        if kind == T_FINISH:
            self.finish(op, t)
        else:
            self.hand(op, t)

    # ---------------------------------------------------------------- operations
    def release(self, op: int, kind: int) -> None:
        a, wait = self.sh.a, self.sh.wait
        for e in range(a["succ_first"][op], a["succ_first"][op + 1]):
            if a["succ_kind"][e] == kind:
                s = a["succ_op"][e]
                wait[s] -= 1
                if wait[s] == 0:
                    self.ready.append(s)

    def begin(self, op: int, now: int) -> None:
        sh, a = self.sh, self.sh.a
        kind = a["op_kind"][op]
        if kind == COMPUTE:
            if self.cpu_busy:
                self.cpu_queue.append(op)
            else:
                self.run_compute(op, now)
            return
        sh.rec["op_start"][op] = now
        self.release(op, DEP_START)
        c = a["op_chan"][op]
        if kind == SEND:
            m = a["op_msg"][op]
            k = sh.nsend[c]
            sh.nsend[c] = k + 1
            s = a["chan_first"][c] + k
            sh.slot_msg[s], sh.msg_k[m] = m, k
            sh.rec["msg_post"][m] = now
            r = sh.slot_recv[s]
            if r >= 0:
                sh.rec["msg_recv"][m], sh.rec["op_msg"][r] = r, m
            if sh.o_send:
                self.timer(now + sh.o_send, T_HAND, op)
            else:
                self.hand(op, now)
            return
        k = sh.nrecv[c]
        sh.nrecv[c] = k + 1
        s = a["chan_first"][c] + k
        sh.slot_recv[s] = op
        m = sh.slot_msg[s]
        if m >= 0:
            sh.rec["msg_recv"][m], sh.rec["op_msg"][op] = op, m
        posted = self.sg.Mailbox.by_name(f"d{c}.{k}").get_async()
        self.pending.append((_comm(posted), W_DATA, op, posted))
        if sh.rts_in[s]:
            self.reply(s, now)

    def run_compute(self, op: int, now: int) -> None:
        self.cpu_busy = True
        self.sh.rec["op_start"][op] = now
        self.release(op, DEP_START)
        self.timer(now + self.sh.a["op_time_ps"][op], T_FINISH, op)

    def finish(self, op: int, t: int) -> None:
        self.sh.rec["op_finish"][op] = t
        self.left -= 1
        self.release(op, DEP_FINISH)
        if self.sh.a["op_kind"][op] == COMPUTE:
            self.cpu_busy = False
            if self.cpu_queue:
                self.run_compute(self.cpu_queue.popleft(), t)

    # ---------------------------------------------------------------- messages
    def put(self, mailbox: str, payload: Any, size: int, receiver: int) -> None:
        """Start a transfer now, with ``receiver``'s actor as the mailbox's permanent receiver
        when given (the transfer then starts without waiting for a receive)."""
        mb = self.sg.Mailbox.by_name(mailbox)
        if receiver >= 0:
            mb.set_receiver(self.sh.actors[receiver])
        self.kept.append(mb.put_async(payload, size))
        self.sh.comms += 1

    def hand(self, op: int, now: int) -> None:
        """The send's message reaches the NIC: eager data goes, or a rendezvous request."""
        sh, a = self.sh, self.sh.a
        m, c = a["op_msg"][op], a["op_chan"][op]
        dst = a["op_peer"][op]
        if a["msg_rdv"][m]:
            sh.rec["rts_sent"][m] = now
            self.put(f"ctl{dst}", ("rts", a["chan_first"][c] + sh.msg_k[m]), sh.ctl, dst)
        else:
            self.send_data(m, now, dst)

    def send_data(self, m: int, now: int, dst: int) -> None:
        """The data leaves: its transfer starts now; its send finishes when it would have
        left the NIC (after the node's earlier sends)."""
        sh, a = self.sh, self.sh.a
        op = a["msg_op"][m]
        c = a["op_chan"][op]
        node = a["rank_node"][self.r]
        sh.rec["msg_queued"][m] = now
        self.put(f"d{c}.{sh.msg_k[m]}", m, a["msg_size"][m], -1 if a["msg_rdv"][m] else dst)
        start = max(now, sh.nic_free[node])
        done = start + int(round(a["msg_size"][m] * sh.ps_per_byte))
        sh.nic_free[node] = done
        sh.rec["msg_start"][m] = start
        self.timer(done, T_FINISH, op)

    def reply(self, s: int, now: int) -> None:
        """The request of slot ``s`` is in and its receive posted: the reply goes back."""
        sh = self.sh
        m = sh.slot_msg[s]
        src = sh.a["op_rank"][sh.a["msg_op"][m]]
        sh.rec["cts_sent"][m] = now
        self.put(f"ctl{src}", ("cts", s), sh.ctl, src)

    def post_ctl(self) -> None:
        posted = self.sg.Mailbox.by_name(f"ctl{self.r}").get_async()
        self.pending.append((_comm(posted), W_CTL, -1, posted))

    def completed(self, p: tuple[Any, int, int, Any]) -> None:
        """A pending receive is done: a receive's data, or a control packet."""
        sh = self.sh
        comm, what, op, posted = p
        now = sh.now()
        if what == W_DATA:
            m = sh.rec["op_msg"][op]
            sh.rec["msg_finish"][m] = int(round(comm.finish_time * 1e12))
            if sh.o_recv:
                self.timer(now + sh.o_recv, T_FINISH, op)
            else:
                self.finish(op, now)
            return
        kind, s = posted[1].get() if isinstance(posted, tuple) else comm.get_payload()
        self.post_ctl()
        m = sh.slot_msg[s]
        if kind == "rts":
            sh.rec["rts_arrived"][m] = now
            if sh.slot_recv[s] >= 0:
                self.reply(s, now)
            else:
                sh.rts_in[s] = True
        else:
            sh.rec["cts_arrived"][m] = now
            self.send_data(m, now, sh.a["op_peer"][sh.a["msg_op"][m]])


def _comm(posted: Any) -> Any:
    """The Comm of a ``get_async``: SimGrid 3.32 returns ``(comm, payload holder)``."""
    return posted[0] if isinstance(posted, tuple) else posted


def simulate(sg: Any, engine: Any, folder: Path) -> dict[str, Any]:
    """Run the programs of ``folder`` (engine created, platform loaded); write the records."""
    arrays = dict(np.load(folder / "programs.npz"))
    fig = json.loads((folder / "program-figures.json").read_text())
    sh = Shared(sg, arrays, fig)
    ranks = [Rank(sh, r) for r in range(len(sh.a["rank_first"]) - 1)]
    for r, rank in enumerate(ranks):
        host = sg.Host.by_name(f"n{sh.a['rank_node'][r]}")
        sh.actors.append(sg.Actor.create(f"rank{r}", host, rank.run))
    engine.run()
    np.savez(folder / "program-result.npz", rank_finish=sh.rank_finish, **sh.rec)
    return {"comms": sh.comms}
