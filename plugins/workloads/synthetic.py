"""Workload ``synthetic``: open-loop traffic of fixed-size messages, at a fraction of the NIC
bandwidth, from a traffic pattern and an injection process (both plugins).

::

    workload: {kind: synthetic, load: 0.3}                        # uniform, Bernoulli
    workload: {kind: synthetic, load: 0.3, pattern: group_shift}
    workload: {kind: synthetic, load: 0.2, pattern: {kind: shift, offset: 8},
               injection: {kind: on_off, on: 2us, off: 8us}}

``pattern`` (a name, or ``{kind: ..., <params>}``) says where each message goes: ``uniform``
(the default), ``group_shift`` (alias ``worst_case``), ``random_permutation``, ``shift``,
``tornado``, ``bit_complement``, ``transpose``, ``nearest_neighbor``, ``hotspot``, ``incast``,
``all_to_all``, ``fixed_hop_pairs`` or a plugin's (:mod:`federation.plugins.patterns`).
``injection`` says when each node creates one: ``bernoulli`` (the default: once per *slot*, the
time its NIC needs to inject one message, with probability ``load``, from a per-node random
phase; booksim's Bernoulli injection), ``poisson``, ``periodic``, ``on_off`` or a plugin's
(:mod:`federation.plugins.injections`).  Every process offers ``load`` times the NIC bandwidth.

In a job, node numbers are the job's: ``uniform`` is uniform over the job's nodes, so a
synthetic job's traffic never leaves them.  ``include_self`` (uniform only) lets a node draw
itself, as BookSim and SST merlin do.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from federation import (
    InjectionContext,
    Messages,
    Params,
    PatternContext,
    Workload,
    WorkloadContext,
    hookimpl,
    resolve_nested,
)
from federation.errors import ConfigError
from federation.models.limits import MAX_MESSAGES, TIME_LIMIT_PS
from federation.models.machine import NestedSpec
from federation.models.units import PS_PER_S, ByteCount
from federation.programs.checks import check_message_size


class PatternSpec(NestedSpec):
    """A traffic pattern: a name or ``{kind: ..., <params>}``."""


class InjectionSpec(NestedSpec):
    """An injection process: a name or ``{kind: ..., <params>}``."""


class SyntheticParams(Params):
    pattern: PatternSpec = Field(
        default_factory=lambda: PatternSpec(kind="uniform", params={}),
        description="destination pattern: a name or {kind: ..., <params>}")
    load: float = Field(0.5, gt=0, le=1, description="offered load, fraction of NIC bandwidth")
    message_size: ByteCount | None = Field(
        None, description="whole bytes per message; default: the machine's packet size"
    )
    include_self: bool = Field(
        False, description="uniform only: a node may draw itself as destination (BookSim and "
        "SST merlin do; the default excludes it)")
    injection: InjectionSpec = Field(
        default_factory=lambda: InjectionSpec(kind="bernoulli", params={}),
        description="when nodes create messages: a name or {kind: ..., <params>}")

    @model_validator(mode="after")
    def _self_only_for_uniform(self) -> SyntheticParams:
        if self.include_self and self.pattern.kind != "uniform":
            raise ValueError(f"include_self applies to the uniform pattern only, not "
                             f"{self.pattern.kind!r}")
        return self


def relocated(exc: ConfigError, prefix: str) -> ConfigError:
    """``exc`` with its path (relative to a nested component) under ``prefix``."""
    path = f"{prefix}.{exc.path}" if exc.path else prefix
    return ConfigError(exc.message, source=exc.source, path=path)


class Synthetic(Workload):
    """Fixed-size messages from a pattern and an injection process, at a load."""

    name = "synthetic"
    Params = SyntheticParams
    params: SyntheticParams

    def __init__(self, params: SyntheticParams) -> None:
        self.pattern, pattern = resolve_nested("patterns", params.pattern, "pattern")
        if params.include_self:  # the uniform pattern's own parameter, given here
            self.pattern = type(self.pattern)(pattern.params.model_copy(
                update={"include_self": True}))
        self.injection, injection = resolve_nested("injections", params.injection, "injection")
        super().__init__(params.model_copy(update={"pattern": pattern,
                                                   "injection": injection}))

    def offered_load(self) -> float:
        return self.params.load

    def _size(self, ctx: WorkloadContext) -> tuple[int, int]:
        """Bytes per message and the slot: ps one message takes at the NIC."""
        size = int(self.params.message_size or ctx.machine.packet_size)
        return size, max(1, int(round(size / ctx.nic_bandwidth * PS_PER_S)))

    def _contexts(self, ctx: WorkloadContext) -> tuple[PatternContext, InjectionContext]:
        size, slot_ps = self._size(ctx)
        n = ctx.network.n_nodes
        nodes = ctx.nodes if ctx.nodes is not None else np.arange(n, dtype=np.int64)
        return (PatternContext(ctx.network, nodes, ctx.whole_network, size),
                InjectionContext(n, slot_ps, self.params.load, int(ctx.horizon_ps), ctx.rng))

    def check(self, ctx: WorkloadContext) -> None:
        """Before anything runs: the pattern's and the process's refusals on these nodes (a
        power of two, a grid, two groups, a burst the NIC cannot inject), and more messages
        over ``ctx.horizon_ps`` than :meth:`generate` holds whole (the preflight gives the
        horizon the run generates them whole over, or 1 ps when it streams them)."""
        self._check_parts(ctx)
        self._check_whole(ctx)

    def _check_parts(self, ctx: WorkloadContext) -> None:
        if self.params.message_size is not None:  # 1e18 B: a slot past int64, a traceback
            check_message_size(int(self.params.message_size), int(ctx.machine.packet_size),
                               ctx.nic_bandwidth, "message_size", "workload.message_size")
        pctx, ictx = self._contexts(ctx)
        for what, component, c in (("pattern", self.pattern, pctx),
                                   ("injection", self.injection, ictx)):
            try:
                component.check(c)
            except ConfigError as exc:
                raise relocated(exc, f"workload.{what}") from None

    def _check_whole(self, ctx: WorkloadContext) -> None:
        """The messages over ``ctx.horizon_ps``, held whole, within the limit."""
        _, slot_ps = self._size(ctx)
        expected = ctx.network.n_nodes * ctx.horizon_ps / slot_ps * self.params.load
        if expected > MAX_MESSAGES:
            field = "stop.measure" if ctx.experiment.stop.measure is not None else "stop.messages"
            raise ConfigError(
                f"warm-up plus measurement would create about {expected:.3g} messages (limit "
                f"{MAX_MESSAGES:.0e} when they are generated whole); shorten stop.warmup or "
                f"{field}, or lower the load", path=field)

    def generate(self, ctx: WorkloadContext) -> Messages:
        """Every message at once (a background, or ``stop.messages``): the batches joined."""
        self._check_whole(ctx)
        parts = [m for _, m in self.batches(ctx, 1 << 20)]
        if not parts:  # a horizon of 0 ps: nothing is sent
            return Messages(time_ps=np.zeros(0, np.int64), src=np.zeros(0, np.int32),
                            dst=np.zeros(0, np.int32), size=np.zeros(0, np.int64))
        return Messages(*(np.concatenate([getattr(m, f) for m in parts])
                          for f in ("time_ps", "src", "dst", "size")))

    def batches(self, ctx: WorkloadContext,
                target_packets: int) -> Iterator[tuple[int, Messages]]:
        """The process's arrivals, drawn a span of slots at a time (a process restarted at a
        span's edge is the same process, so spans only bound memory), each given its
        destination by the pattern.  The process draws what it needs once (Bernoulli: each
        node's phase within the slot) first, then the pattern (a fixed mapping).

        The spans cover the whole horizon: whole spans of slots up to the last slot edge
        before it, then the remainder up to the horizon itself (drawn last, so the messages
        before it do not depend on whether the horizon falls on a slot edge)."""
        self._check_parts(ctx)
        n = ctx.network.n_nodes
        size, slot_ps = self._size(ctx)
        per_slot = n * self.params.load * -(-size // int(ctx.machine.packet_size))
        span = max(1, int(target_packets / max(per_slot, 1e-12)))
        pctx, ictx = self._contexts(ctx)
        arrivals = self.injection.start(ictx)
        destinations = self.pattern.start(pctx, ctx.rng)
        return self._spans(ctx, arrivals, _checked(destinations, self.pattern.name, n),
                           span_edges(int(ctx.horizon_ps), slot_ps, span), size,
                           self.pattern.numbers_messages())

    def _spans(self, ctx: WorkloadContext, arrivals, destinations,  # noqa: ANN001
               edges: Iterator[tuple[int, int, bool]], size: int, ordered: bool
               ) -> Iterator[tuple[int, Messages]]:
        for a_ps, b_ps, last in edges:
            # made by a method: this generator holds no arrays of a batch while it waits
            yield ((TIME_LIMIT_PS if last else b_ps),
                   self._span(ctx, arrivals, destinations, a_ps, b_ps, size, ordered))

    @staticmethod
    def _span(ctx: WorkloadContext, arrivals, destinations,  # noqa: ANN001
              a_ps: int, b_ps: int, size: int, ordered: bool) -> Messages:
        """The messages created in ``[a_ps, b_ps)``, sorted.  A pattern that numbers a
        node's messages (``ordered``: ``all_to_all``, ``random_permutation`` with
        ``rotate_bytes``; ``TrafficPattern.numbers_messages``) is handed each node's
        arrivals in creation order; the others as the process drew them."""
        src, t = arrivals(a_ps, b_ps)
        keep = t < ctx.horizon_ps
        src, t = src[keep], t[keep]
        if ordered:
            src, t = creation_order(src, t)
        dst = np.asarray(destinations(src))
        sends = dst >= 0  # a pattern may leave a node silent (incast's target)
        if not sends.all():
            src, t, dst = src[sends], t[sends], dst[sends]
        msgs = Messages(time_ps=t.astype(np.int64), src=src.astype(np.int32),
                        dst=dst.astype(np.int32), size=np.full(src.shape[0], size, dtype=np.int64))
        return msgs.sorted()


def _checked(destinations: Any, name: str, n: int) -> Any:
    """A pattern's drawer whose answers are checked: one integer node (or -1: silent) per
    source, within the job's nodes; a plugin pattern's slip named as its own, not as the
    workload's (it was an IndexError, or blamed on 'synthetic')."""
    def draw(src: np.ndarray) -> np.ndarray:
        dst = np.asarray(destinations(src))
        what = None
        if dst.shape != src.shape or dst.dtype.kind not in "iu":
            what = (f"{dst.shape[0] if dst.ndim == 1 else dst.shape} destinations of type "
                    f"{dst.dtype} for {src.shape[0]} sources")
        elif dst.size and (int(dst.min()) < -1 or int(dst.max()) >= n):
            bad = int(dst.max()) if int(dst.max()) >= n else int(dst.min())
            what = f"destination node {bad}; the job has nodes 0 to {n - 1} (-1: silent)"
        if what is not None:
            raise ConfigError(f"pattern {name!r} returned {what}", path="workload.pattern")
        return dst
    return draw


def span_edges(horizon_ps: int, slot_ps: int, span: int) -> Iterator[tuple[int, int, bool]]:
    """The spans ``[a, b)`` (ps) the traffic before ``horizon_ps`` is drawn in, and whether
    each is the last: ``span`` slots at a time up to the last slot edge at or before the
    horizon, then the rest of the last, partial slot (a horizon shorter than a slot: that part
    alone).  Lazy: a long run at a small span has very many."""
    n_slots = horizon_ps // slot_ps
    tail = horizon_ps > n_slots * slot_ps
    for s0 in range(0, n_slots, span):
        s1 = min(n_slots, s0 + span)
        yield s0 * slot_ps, s1 * slot_ps, s1 == n_slots and not tail
    if tail:
        yield n_slots * slot_ps, horizon_ps, True


def creation_order(src: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The arrivals ``(src, t)`` with each node's times put in creation order over the
    positions its arrivals hold: the sources stay where they are (so a pattern drawing per
    message draws as before), and a node's k-th entry is its k-th message in time (ties in
    the order drawn).  Arrivals already so ordered (Bernoulli's, periodic's) are unchanged."""
    if src.size < 2:
        return src, t
    by_time = np.lexsort((t, src))  # by node, then time; stable
    by_node = np.argsort(src, kind="stable")  # by node, then position
    if np.array_equal(by_time, by_node):
        return src, t
    out = np.empty_like(t)
    out[by_node] = t[by_time]
    return src, out


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(Synthetic)
