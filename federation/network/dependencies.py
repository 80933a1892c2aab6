"""The channel dependencies of route tables and a :class:`~federation.network.deadlock.TablePlan`,
walked per routing state rather than per packet (see :mod:`federation.network.deadlock`).

A packet's routing is a function of its *state* at a router: the router, what it heads for
(its destination group through ``gnext``, a router of its own group through ``lnext``, a
Valiant intermediate group or router), how it got there (minimal, Valiant's second phase,
undecided in its source group) and its VC level (and, for dateline tables, the dimension of
its last hop).  The engine's table routing (:mod:`federation.engine.tables_route`) reads
nothing else.  So every packet of the run is in one of ``modes x columns x routers x levels``
states, and a breadth-first search from every state a packet can start in finds every state
any packet can reach, each expanded once, all of one kind at a time as arrays.

The graph has three kinds of vertices: channels ``port * n_vcs + vc``, *decision states*
(a packet at a router about to choose its hop: edges to the channels it may take), and
*fan-out states* (a packet that reached its destination group, its intermediate group or
router, or commits to a Valiant path: edges to the decision states it may continue in, at the
same router).  A hop adds ``state -> channel`` and ``channel -> state at the next router``.

Modes (``kind``) and their columns:

========= ======= ===========================================================================
kind      column  the packet
========= ======= ===========================================================================
MIN_G     group   heads minimally for a router of that group (``gnext``)
MIN_L     local   is in its destination's group and heads for it (``lnext``)
P1_G/L    as MIN  the same in Valiant's second phase, VCs shifted by ``phase_vc_offset``
VIA       group   heads for its intermediate group (Valiant, first phase)
VR_G/VR_L group/  heads for its intermediate router: its group, then the router
          local
UND0/UND  group   is undecided between minimal and Valiant at its source router / at
                  another router of its source group (``decide: source_group``)
CMT       group   commits to a Valiant path here (its destination group: the intermediate is
                  another one)
========= ======= ===========================================================================

Fan-out states, one per (router, level): ``ENTER`` (reached the destination group: any
router of it carrying nodes), ``START1`` (Valiant's second phase begins: any destination),
``VIASTART`` (a Valiant path begins at the source router, chosen there or committed to there:
any intermediate), ``VRENTER``
(reached the intermediate router's group: any router of it).  The intermediate is any group
other than the packet's source and destination groups (``intermediates: other_groups``,
what every built-in draw gives: so a Valiant phase never starts in the source group, and the
second phase never heads for a router of the intermediate group) or any group at all
(``any_group``).

Visited states are kept as one bit per (slot, level) -- a slot is one (mode, column, router)
or (fan-out kind, router); the edges between neighbouring channels and states as bits of small
dense bitmaps (:class:`~federation.network.edge_set.EdgeSet`), so that the many destinations
sharing one dependency cost no more than one.  Counter levels at or above the VCs are walked as
one level that stands for all of them: a hop from it, or one that reaches such a VC, is noted,
and where the walk is exact (no Valiant phase, no detour) refused (:class:`VCOverflow`: the
run would stop on it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from federation.network.edge_set import EdgeSet, distinct
from federation.network.tables import VC_COUNTER

if TYPE_CHECKING:
    from federation.network import Network
    from federation.network.tables import RouteTables, TablePlan

MIN_G, MIN_L, P1_G, P1_L, VIA, VR_G, VR_L, UND0, UND, CMT = range(10)
G_KINDS = (MIN_G, P1_G, VIA, VR_G, UND0, UND, CMT)
#: most bytes the walk's visited-state table may take
MAX_STATE_BYTES = 1 << 30
#: bits of one slot's word: at most this many (VC level, dimension) pairs
MAX_LEVELS = 64
#: states expanded at once (bounds the walk's temporaries)
CHUNK = 1 << 20
_WORDS = ((8, np.uint8), (16, np.uint16), (32, np.uint32), (64, np.uint64))


def popcount(a: np.ndarray) -> np.ndarray:
    """Set bits of each word (NumPy 2's ``bitwise_count``; a byte table before it)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(a).astype(np.int64)
    table = np.array([bin(i).count("1") for i in range(256)], np.int64)
    b = a.astype(np.uint64)
    return sum(table[(b >> np.uint64(8 * k)) & np.uint64(255)] for k in range(8))


class ProofTooLarge(ValueError):
    """The routing's state space is too large to walk within :data:`MAX_STATE_BYTES`."""


def fan(ptr: np.ndarray, values: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For CSR lists (``values[ptr[k]:ptr[k+1]]`` for key ``k``): ``(i, v)`` for every value
    ``v`` of the list of ``keys[i]``."""
    counts = ptr[keys + 1] - ptr[keys]
    i = np.repeat(np.arange(keys.size), counts)
    k = np.arange(i.size) - np.repeat(np.cumsum(counts) - counts, counts)
    return i, values[ptr[keys[i]] + k]


def csr(keys: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((values, keys))
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr, values[order].astype(np.int64)


class VCOverflow(Exception):
    """Hops some packet may make on a VC that does not exist: ``port`` and ``vc`` arrays,
    one entry per hop found (repeats included)."""

    def __init__(self, port: np.ndarray, vc: np.ndarray) -> None:
        super().__init__(f"{port.size} hops on a VC beyond the VCs there are")
        self.port, self.vc = port, vc


class Walk:
    """One walk of a routing's states (see the module docstring); :meth:`run` gives the edges."""

    def __init__(self, network: Network, tables: RouteTables, n_vcs: int, plan: TablePlan,
                 owner: str) -> None:
        pt = network.ports
        self.plan = plan
        self.network = network
        self.R = R = network.n_routers
        self.V = n_vcs
        self.ports_of = pt
        self.peer = pt.port_router[pt.port_peer].astype(np.int64)
        self.group = tables.router_group.astype(np.int64)
        self.local = tables.router_local.astype(np.int64)
        self.gnext, self.lnext = tables.gnext, tables.lnext  # read as they are (no copy)
        self.G, self.L = self.gnext.shape[1], self.lnext.shape[1]
        self.NCOL = max(self.G, self.L)
        self._rule(tables, pt)
        self.offset = int(tables.phase_vc_offset)
        carriers = distinct(network.node_router.astype(np.int64))
        self.carriers = carriers
        self.carrier_groups = distinct(self.group[carriers])
        self.all_groups = np.arange(self.G, dtype=np.int64)
        self.carr_ptr, self.carr_local = csr(self.group[carriers], self.local[carriers], self.G)
        rid = np.arange(R)
        self.all_ptr, self.all_local = csr(self.group, self.local[rid], self.G)
        self.kinds = [MIN_G, MIN_L]
        # the second phase is the minimal one where its VCs are not shifted
        self.alias = {k: k for k in range(10)} | {P1_G: MIN_G, P1_L: MIN_L}
        if plan.valiant != "none":
            if self.offset:
                self.kinds += [P1_G, P1_L]
                self.alias.update({P1_G: P1_G, P1_L: P1_L})
            self.kinds += [VIA] if plan.valiant == "group" else [VR_G, VR_L]
            if plan.decide == "source_group":
                self.kinds += [UND0, UND, CMT]
        self.kidx = {k: i for i, k in enumerate(self.kinds)}
        self.masks = None
        if plan.spread != "none":
            from federation.network.equal_cost import equal_cost_ports

            self.masks = equal_cost_ports(network, tables, owner)
        S, K = self.S, len(self.kinds)
        if S > MAX_LEVELS:
            raise ProofTooLarge(f"its VC levels and dimensions make {S} states per router and "
                                f"column, above the {MAX_LEVELS} the proof handles")
        bits, self.word = next((b, w) for b, w in _WORDS if S <= b)
        # codes are bit fields (shifts, not divisions): level | router | column | kind
        self.sb = bits.bit_length() - 1
        self.rb = max(R - 1, 1).bit_length()
        self.cb = max(self.NCOL - 1, 1).bit_length()
        RR, SS = 1 << self.rb, 1 << self.sb
        self.n_ch = pt.n_ports * n_vcs
        self.base_dec = self.n_ch
        self.base_ent = self.base_dec + (K << self.cb) * RR * SS
        self.base_s1 = self.base_ent + 2 * RR * SS
        self.base_vs = self.base_s1 + RR * SS
        self.base_vr = self.base_vs + RR * SS
        self.end = self.base_vr + RR * SS
        slots = ((K << self.cb) + 5) * RR
        size = slots * bits // 8
        if size > MAX_STATE_BYTES:
            raise ProofTooLarge(
                f"its routing states ({K} modes x {self.NCOL} columns x {R} routers x {S} "
                f"levels) would take {size / 2**30:.1f} GiB to walk, above the "
                f"{MAX_STATE_BYTES >> 30} GiB limit")
        self.seen = np.zeros(slots, self.word)  #: bit s of slot k: state (k << sb) | s seen

    def _rule(self, tables: RouteTables, pt: object) -> None:
        """The VC rule as arrays: a state's level and dimension index are ``divmod(s, D)``."""
        n_ports = pt.n_ports
        self.counter = tables.vc_mode == VC_COUNTER
        if self.counter:
            bump = tables.port_vc_bump
            self.bump = (np.zeros(n_ports, np.int64) if bump is None
                         else np.asarray(bump).astype(np.int64))
            # minimal's vc_step: on (BookSim2): a bumping hop itself takes the higher VC
            self.on_bump = bool(tables.extra.get("vc_on_bump", False))
            self.D, self.dim0 = 1, 0
        else:
            pd = (np.full(n_ports, -1, np.int64) if tables.port_dim is None
                  else np.asarray(tables.port_dim).astype(np.int64))
            values = distinct(np.concatenate([[-1], pd]))
            self.dimidx = np.searchsorted(values, pd)
            self.dim0 = int(np.searchsorted(values, -1))
            dl = tables.port_dateline
            self.dateline = (np.zeros(n_ports, bool) if dl is None
                             else np.asarray(dl).astype(bool))
            self.D = int(values.size)
        # dateline levels are 0 and 1, plus what the plan's bumps add (a level at or above
        # the VCs is walked: a change of dimension resets it, a hop in the same one overflows)
        bumps = self.plan.commit_bump + self.plan.turn_bump
        # counter levels only grow: one level past the VCs stands for every higher one, from
        # which any hop overflows (so the walk finds the hops that would, :attr:`over`)
        self.top = self.V if self.counter and self.V < MAX_LEVELS else None
        levels = (self.V + (self.top is not None)) if self.counter else 2 + bumps
        self.S = levels * self.D
        #: hops some packet may make on a VC at or above ``n_vcs``: (router, port, VC) arrays
        self.over: list[tuple[np.ndarray, np.ndarray]] = []

    # ---------------------------------------------------------------- codes

    def dec(self, kind: int, col: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
        k = self.kidx[self.alias[kind]]
        return self.base_dec + ((((k << self.cb) + col) << self.rb | y) << self.sb | s)

    def ent(self, p1: int, y: np.ndarray, s: np.ndarray) -> np.ndarray:
        flag = 1 if p1 and self.offset else 0
        return self.base_ent + ((flag << self.rb | y) << self.sb | s)

    def node(self, base: int, y: np.ndarray, s: np.ndarray) -> np.ndarray:
        return base + (y << self.sb | s)

    def bumped(self, s: np.ndarray, levels: int) -> tuple[np.ndarray, np.ndarray]:
        """``s`` with ``levels`` more VC levels, and where that level still exists."""
        s2 = self.capped(s + levels * self.D)
        return s2, s2 < self.S

    def capped(self, s: np.ndarray) -> np.ndarray:
        """Counter levels above the VCs as the one level :attr:`top` that stands for them."""
        return s if self.top is None else np.minimum(s, self.top)

    def overflow(self, o: np.ndarray, vc: np.ndarray) -> None:
        """Note the hops on ports ``o`` whose VC ``vc`` does not exist (the run would stop on
        them): :func:`federation.network.deadlock.prove` refuses the routing."""
        bad = vc >= self.V
        if bad.any():
            self.over.append((o[bad], vc[bad]))

    # ---------------------------------------------------------------- the walk

    def run(self) -> tuple[np.ndarray, np.ndarray, int]:
        """Every edge among channels and reachable states (vertex codes; channels first, as
        ``port * n_vcs + vc``), and the number of states walked."""
        self.edge_set = EdgeSet(self)
        frontier = self.fresh()
        fanout = max(self.G, self.L, 1)
        dec_width = fanout if CMT in self.kinds else 4
        expanders = ((self.base_dec, self.base_ent, self.expand_dec, dec_width),
                     (self.base_ent, self.base_s1, self.expand_enter, self.L),
                     (self.base_s1, self.base_vs, self.expand_start1, fanout),
                     (self.base_vs, self.base_vr, self.expand_viastart, fanout),
                     (self.base_vr, self.end, self.expand_vrenter, self.L))
        while frontier.size:
            nxt: list[np.ndarray] = []
            for lo, hi, fn, width in expanders:
                sel = frontier[(frontier >= lo) & (frontier < hi)]
                step = max(1, CHUNK // max(width, 1))
                for k in range(0, sel.size, step):
                    nxt.append(self.admit(fn(sel[k:k + step])))
            frontier = np.concatenate(nxt)
        states = int(popcount(self.seen).sum())
        # only where the walk is exact: a Valiant packet's forgotten destination and a
        # detour's are supersets, whose longer paths no packet may take (the run refuses one
        # that does, naming the routing: engine/reports.py)
        exact = self.plan.valiant == "none" and self.plan.detour == "none"
        if self.over and exact:
            o, vc = (np.concatenate(a) for a in zip(*self.over, strict=True))
            raise VCOverflow(o, vc)
        parts = self.edge_set.arrays()
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), states
        return (np.concatenate([a for a, _ in parts]), np.concatenate([b for _, b in parts]),
                states)

    def split(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """State codes as (slot, the state's bit in the slot's word)."""
        rel = codes - self.n_ch
        slot, s = rel >> self.sb, rel & ((1 << self.sb) - 1)
        return slot, np.left_shift(np.ones(1, self.word), s.astype(self.word))

    def edges(self, a: np.ndarray, b: np.ndarray) -> None:
        """Edges ``a -> b``; a decision state with a single hop is not a vertex: an edge to
        it goes to its hop's channel instead (none where it has no hop)."""
        b = self.resolve(np.broadcast_to(b, a.shape).astype(np.int64))
        keep = b >= 0
        self.edge_set.add(np.broadcast_to(a, b.shape)[keep].astype(np.int64), b[keep])

    def single(self, kind: int) -> bool:
        """Decision states of ``kind`` have one hop (the table's) and nothing else."""
        spread = self.masks is not None and (
            self.plan.spread == "all" and kind in (MIN_G, MIN_L, P1_G, P1_L))
        return kind not in (UND0, UND, CMT) and not spread

    def resolve(self, codes: np.ndarray) -> np.ndarray:
        """``codes`` with every single-hop decision state replaced by its hop's channel
        (-1: no hop)."""
        out = codes.copy()
        at = np.nonzero((codes >= self.base_dec) & (codes < self.base_ent))[0]
        if at.size == 0:
            return out
        kc, y, s = self.decode(codes[at], self.base_dec)
        col, kc = kc & ((1 << self.cb) - 1), kc >> self.cb
        for i, kind in enumerate(self.kinds):
            m = np.nonzero(kc == i)[0]
            if m.size == 0 or not self.single(kind):
                continue
            o = (self.gnext if kind in G_KINDS else self.lnext)[y[m], col[m]].astype(np.int64)
            vc, _, ok = self.step(s[m], np.maximum(o, 0),
                                  self.offset if kind in (P1_G, P1_L) else 0)
            out[at[m]] = np.where((o >= 0) & ok, np.maximum(o, 0) * self.V + vc, -1)
        return out

    def admit(self, codes: np.ndarray) -> np.ndarray:
        """The states of ``codes`` not seen before, now marked seen."""
        slot, bit = self.split(codes)
        codes = distinct(codes[(self.seen[slot] & bit) == 0])
        slot, bit = self.split(codes)
        np.bitwise_or.at(self.seen, slot, bit)
        return codes

    def fresh(self) -> np.ndarray:
        """The states packets start in at their source routers (VC level 0, no dimension),
        admitted (a chunk of sources at a time)."""
        cg = self.carrier_groups
        out = []
        for k in range(0, self.carriers.size, max(1, CHUNK // max(cg.size, 1))):
            x = self.carriers[k:k + max(1, CHUNK // max(cg.size, 1))]
            s0 = np.full(x.size, self.dim0, np.int64)
            xs = np.repeat(x, cg.size)
            g = np.tile(cg, x.size)
            other = g != self.group[xs]
            xs, g = xs[other], g[other]
            zero = np.full(xs.size, self.dim0, np.int64)
            part = [self.dec(MIN_G, g, xs, zero), self.ent(0, x, s0)]
            if self.plan.valiant != "none":
                if self.plan.decide == "source":
                    part.append(self.node(self.base_vs, x, s0))
                else:
                    part.append(self.dec(UND0, g, xs, zero))
            if self.plan.detour == "source":
                part.append(self.detours(x, s0))
            out.append(self.admit(np.concatenate(part)))
        return np.concatenate(out)

    def detours(self, x: np.ndarray, s0: np.ndarray) -> np.ndarray:
        """``detour: source``: from source routers ``x`` (destination in their own group,
        state ENTER), a hop to any neighbour of the group, which the packet then enters again
        ``detour_bump`` levels up."""
        from federation.network.routes import cable_ports

        cp = cable_ports(self.network)
        i, o = fan(cp.indptr.astype(np.int64), cp.port.astype(np.int64), x)
        z = self.peer[o]
        keep = self.group[z] == self.group[x[i]]
        i, o, z = i[keep], o[keep], z[keep]
        vc, s2, ok = self.step(s0[i], o, 0)
        self.overflow(o, vc)
        s3, up = self.bumped(s2, self.plan.detour_bump)
        ok &= up
        ch = o[ok] * self.V + vc[ok]
        tgt = self.ent(0, z[ok], s3[ok])
        self.edges(self.ent(0, x[i][ok], s0[i][ok]), ch)
        self.edges(ch, tgt)
        return tgt

    def decode(self, codes: np.ndarray, base: int) -> tuple[np.ndarray, ...]:
        rel = codes - base
        s = rel & ((1 << self.sb) - 1)
        rel >>= self.sb
        y = rel & ((1 << self.rb) - 1)
        rel >>= self.rb
        return rel, y, s

    # ---------------------------------------------------------------- fan-out states

    def expand_enter(self, codes: np.ndarray) -> np.ndarray:
        """Reached the destination group: any other router of it that carries nodes."""
        flag, y, s = self.decode(codes, self.base_ent)
        i, loc = fan(self.carr_ptr, self.carr_local, self.group[y])
        keep = loc != self.local[y[i]]
        i, loc = i[keep], loc[keep]
        kind = np.where(flag[i] == 1, P1_L, MIN_L)
        tgt = np.where(kind == P1_L, self.dec(P1_L, loc, y[i], s[i]),
                       self.dec(MIN_L, loc, y[i], s[i]))
        self.edges(codes[i], tgt)
        return tgt

    def expand_start1(self, codes: np.ndarray) -> np.ndarray:
        """Valiant's second phase begins here: any destination, minimally, shifted VCs.  On
        dateline tables its levels start afresh (the engine forgets the packet's dimension
        at the turn: ``tables_route.follow``)."""
        _, y, s = self.decode(codes, self.base_s1)
        if not self.counter:
            s = np.full_like(s, self.dim0)
        i, g = fan(np.arange(y.size + 1) * self.carrier_groups.size,
                   np.tile(self.carrier_groups, y.size), np.arange(y.size))
        keep = g != self.group[y[i]]
        src, tgt = [codes[i][keep]], [self.dec(P1_G, g[keep], y[i][keep], s[i][keep])]
        if self.plan.intermediates == "any_group":  # destinations in this group too
            src.append(codes)
            tgt.append(self.ent(1, y, s))
        tgt = np.concatenate(tgt)
        self.edges(np.concatenate(src), tgt)
        return tgt

    def expand_viastart(self, codes: np.ndarray) -> np.ndarray:
        """Commits to a Valiant path here: any intermediate group (or router)."""
        _, y, s = self.decode(codes, self.base_vs)
        i, g = fan(np.arange(y.size + 1) * self.G, np.tile(self.all_groups, y.size),
                   np.arange(y.size))
        keep = g != self.group[y[i]]
        kind = VIA if self.plan.valiant == "group" else VR_G
        src, tgt = [codes[i][keep]], [self.dec(kind, g[keep], y[i][keep], s[i][keep])]
        if self.plan.intermediates == "any_group":  # the source's own group too
            src.append(codes)
            tgt.append(self.node(self.base_s1 if kind == VIA else self.base_vr, y, s))
        tgt = np.concatenate(tgt)
        self.edges(np.concatenate(src), tgt)
        return tgt

    def expand_vrenter(self, codes: np.ndarray) -> np.ndarray:
        """In the intermediate router's group: any router of it; here itself, the turn."""
        _, y, s = self.decode(codes, self.base_vr)
        i, loc = fan(self.all_ptr, self.all_local, self.group[y])
        keep = loc != self.local[y[i]]
        tgt = self.dec(VR_L, loc[keep], y[i][keep], s[i][keep])
        s2, ok = self.bumped(s, self.plan.turn_bump)
        turn = self.node(self.base_s1, y[ok], s2[ok])
        tgt = np.concatenate([tgt, turn])
        self.edges(np.concatenate([codes[i][keep], codes[ok]]), tgt)
        return tgt

    # ---------------------------------------------------------------- decisions

    def expand_dec(self, codes: np.ndarray) -> np.ndarray:
        kc, y, s = self.decode(codes, self.base_dec)
        col, kc = kc & ((1 << self.cb) - 1), kc >> self.cb
        out = []
        for i, kind in enumerate(self.kinds):
            m = kc == i
            if m.any():
                fn = self.commit if kind == CMT else self.hop
                out.append(fn(kind, codes[m], col[m], y[m], s[m]))
        return np.concatenate(out)

    def commit(self, kind: int, codes: np.ndarray, col: np.ndarray, y: np.ndarray,
               s: np.ndarray) -> np.ndarray:
        """A packet for group ``col`` commits to a Valiant path here: any intermediate group
        other than this one and ``col`` (``any_group``: any group at all)."""
        i, g = fan(np.arange(y.size + 1) * self.G, np.tile(self.all_groups, y.size),
                   np.arange(y.size))
        keep = g != self.group[y[i]]
        anyg = self.plan.intermediates == "any_group"
        if not anyg:
            keep &= g != col[i]
        via = VIA if self.plan.valiant == "group" else VR_G
        src, tgt = [codes[i][keep]], [self.dec(via, g[keep], y[i][keep], s[i][keep])]
        if anyg:  # this router's own group too
            src.append(codes)
            tgt.append(self.node(self.base_s1 if via == VIA else self.base_vr, y, s))
        tgt = np.concatenate(tgt)
        self.edges(np.concatenate(src), tgt)
        return tgt

    def ports(self, kind: int, col: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(i, port)``: the ports state ``i`` may leave on (the table's, or every equal-cost
        minimal port where the plan spreads)."""
        g = kind in G_KINDS
        spread = self.plan.spread
        if self.masks is not None and (
                spread == "all" and kind in (MIN_G, MIN_L, P1_G, P1_L)
                or kind in (UND0, UND)):
            m = (self.masks.gmask if g else self.masks.lmask)[y, col]
            first, port = self.masks.first, self.masks.port
            idx, out = [], []
            deg = int((first[1:] - first[:-1]).max()) if first.size > 1 else 0
            for k in range(deg):
                has = np.nonzero((m >> np.uint64(k)) & np.uint64(1))[0]
                idx.append(has)
                out.append(port[first[y[has]] + k])
            if not idx:
                return np.zeros(0, np.int64), np.zeros(0, np.int64)
            return np.concatenate(idx), np.concatenate(out).astype(np.int64)
        o = (self.gnext if g else self.lnext)[y, col].astype(np.int64)
        i = np.nonzero(o >= 0)[0]  # no entry: the engine stops the run there ("no route")
        return i, o[i]

    def step(self, s: np.ndarray, o: np.ndarray, off: int) -> tuple[np.ndarray, ...]:
        """The engine's VC rule (``tables_route.vc_rule``): the hop's VC, the state after it,
        and whether the VC exists (a hop on a VC beyond ``router.vcs``, which would stop the run,
        is noted by :meth:`overflow` and refused after the walk)."""
        if self.counter:
            lvl = s
            s2 = lvl + self.bump[o]
            vc = (s2 if self.on_bump else lvl) + off
            s2 = self.capped(s2)
        else:
            lvl, d = np.divmod(s, self.D)
            do = self.dimidx[o]
            lvl = np.where(do != d, 0, lvl)
            lvl = np.where(self.dateline[o], 1, lvl)
            vc = lvl + off
            s2 = lvl * self.D + do
        return vc, s2, (vc < self.V) & (s2 < self.S)

    def hop(self, kind: int, codes: np.ndarray, col: np.ndarray, y: np.ndarray,
            s: np.ndarray) -> np.ndarray:
        """Every hop of these decision states: ``state -> channel -> next state``."""
        out = []
        if kind == UND0:  # the commitment at the source router: no channel leads here, so
            # the start shared by every destination is exact (as for ``decide: source``)
            vs = self.node(self.base_vs, y, s)
            self.edges(codes, vs)
            out.append(vs)
        elif kind == UND:  # after a hop: the intermediate is not the destination's group
            s2, ok = self.bumped(s, self.plan.commit_bump)
            cmt = self.dec(CMT, col[ok], y[ok], s2[ok])
            self.edges(codes[ok], cmt)
            out.append(cmt)
        i, o = self.ports(kind, col, y)
        codes, col, y, s = codes[i], col[i], y[i], s[i]
        vc, s2, ok = self.step(s, o, self.offset if kind in (P1_G, P1_L) else 0)
        self.overflow(o, vc)
        codes, col, y, o, vc, s2 = codes[ok], col[ok], y[ok], o[ok], vc[ok], s2[ok]
        ch = o * self.V + vc
        z = self.peer[o]
        tgt = self.arrive(kind, col, y, z, s2)
        if not self.single(kind):  # a vertex of the graph
            self.edges(codes, ch)
        keep = tgt >= 0
        self.edges(ch[keep], tgt[keep])
        out.append(tgt[keep])
        return np.concatenate(out)

    def arrive(self, kind: int, col: np.ndarray, y: np.ndarray, z: np.ndarray,
               s: np.ndarray) -> np.ndarray:
        """The state at router ``z`` after a hop from ``y`` (-1: delivered there)."""
        gz = self.group[z]
        if kind in (MIN_G, P1_G):
            return np.where(gz == col, self.ent(kind == P1_G, z, s), self.dec(kind, col, z, s))
        if kind == VIA:
            return np.where(gz == col, self.node(self.base_s1, z, s), self.dec(VIA, col, z, s))
        if kind == VR_G:
            return np.where(gz == col, self.node(self.base_vr, z, s), self.dec(VR_G, col, z, s))
        if kind in (UND0, UND):  # still in the source group: undecided; else minimal
            out = np.where(gz == col, self.ent(0, z, s), self.dec(MIN_G, col, z, s))
            return np.where(gz == self.group[y], self.dec(UND, col, z, s), out)
        # lnext kinds: a hop out of the group heads back for it (its target router forgotten:
        # a superset); at the target router the packet is delivered, or turns (VR_L)
        back = {MIN_L: MIN_G, P1_L: P1_G, VR_L: VR_G}[kind]
        left = gz != self.group[y]
        out = np.where(left, self.dec(back, self.group[y], z, s), self.dec(kind, col, z, s))
        at = ~left & (self.local[z] == col)
        if kind == VR_L:
            s2, ok = self.bumped(s, self.plan.turn_bump)
            turn = np.where(ok, self.node(self.base_s1, z, np.where(ok, s2, 0)), -1)
            return np.where(at, turn, out)
        return np.where(at, -1, out)


def table_edges(network: Network, tables: RouteTables, n_vcs: int, plan: TablePlan,
                owner: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Edges (vertex codes, channels first: ``port * n_vcs + vc``) of the tables' dependency
    graph under ``plan``, and the number of routing states walked.  Raises
    :class:`VCOverflow` when a packet may be given a VC at or above ``n_vcs``."""
    return Walk(network, tables, n_vcs, plan, owner).run()
