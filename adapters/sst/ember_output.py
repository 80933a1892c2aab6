"""What an ember run reports, read back into our results schema (closed-loop points).

ember prints little of its own, so the adapter asks it for the one record that covers every
motif: ``EmberEngine``'s ``motifLog`` parameter (``ember/embermotiflog.cc``) makes each rank's
engine append, when a motif ends, one line

    <job> <rank> <motif number> <motif name> <start> <end>

to ``<prefix>.log`` (``<prefix>-<sst rank>.log`` when sst itself runs on several MPI ranks),
where ``<start>`` and ``<end>`` are sst-core ``UnitAlgebra`` times printed by
``toStringBestSI()``: a value with **six significant digits** and an SI unit (``0 ns``,
``1.54904 us``).  The start of motif 0 is always ``0 ns`` (the engine never logs it; the
field keeps its initial value).  From these lines come each rank's finish (its last motif's
end) and the program completion (the latest of them).

The ``PingPong`` motif also prints, on rank 0, one line per motif with its own timer
(``emberpingpong.cc``, ``%.3f`` us: nanosecond resolution):

    PingPong: otherRank 1, total time 1.549 us, loop 2, bufLen 8, latency 0.387 us. bandwidth ...

``Halo3D`` prints its parameters only, and firefly/hermes print nothing per message, so the
number of MPI operations and messages is not in SST's output: the summary takes them from the
program our workload builds for the same parameters (the input, not a measurement; see
docs/sst.md, "Results of closed-loop points").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from federation.results.model import LatencyStats, PointSummary, ProgramSummary

from .ember import MOTIF_LOG
from .results import SstOutputError, SstStdout, StatRow, count
from .script import SstConfig

#: picoseconds per unit of ``toStringBestSI`` (sst-core's SI table; times are in seconds)
_PS = {"s": Decimal(10) ** 12, "ms": Decimal(10) ** 9, "us": Decimal(10) ** 6,
       "ns": Decimal(10) ** 3, "ps": Decimal(1), "fs": Decimal(10) ** -3}
_TIME = r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?) ([a-z]?s)"
_LOG_LINE = re.compile(rf"^(-?\d+) (-?\d+) (\d+) (\S+) {_TIME} {_TIME}$")
_PINGPONG = re.compile(
    r"(\S+): otherRank (\d+), total time ([0-9.]+) us, loop (\d+), bufLen (\d+), "
    r"latency ([0-9.]+) us\. bandwidth ([0-9.eE+-]+|nan|inf) GB/s")
#: significant digits of ``UnitAlgebra::toStringBestSI()`` (its default precision)
SI_DIGITS = 6


@dataclass(frozen=True)
class MotifRecord:
    """One motif of one rank as ember's motif log states it (times in picoseconds, rounded
    to what the six printed digits say)."""

    job: int
    rank: int
    motif: int
    name: str
    start_ps: int
    end_ps: int


@dataclass(frozen=True)
class PingPongReport:
    """The line rank 0 prints at the end of each ``PingPong`` motif (its own timer)."""

    motif: str
    other_rank: int
    total_ns: float
    iterations: int
    size: int
    latency_ns: float


def si_time_ps(value: str, unit: str) -> int:
    """``toStringBestSI`` text as integer picoseconds (rounded half up; SST's clock is ps)."""
    try:
        ps = Decimal(value) * _PS[unit]
    except (InvalidOperation, KeyError):
        raise ValueError(f"not an SST time: {value!r} {unit!r}") from None
    return int(ps.to_integral_value(rounding="ROUND_HALF_UP"))


def parse_motif_log(text: str, source: str = "motifs.log") -> list[MotifRecord]:
    """Every line of an ember motif log; :class:`SstOutputError` names the first line that is
    not ``job rank motif name start end``."""
    out = []
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        m = _LOG_LINE.match(line.strip())
        if m is None:
            raise SstOutputError(f"{source}: line {no}: expected '<job> <rank> <motif> <name> "
                                 f"<start> <unit> <end> <unit>' (ember motifLog), got {line!r}")
        try:
            start, end = si_time_ps(m[5], m[6]), si_time_ps(m[7], m[8])
        except ValueError as e:
            raise SstOutputError(f"{source}: line {no}: {e}") from None
        out.append(MotifRecord(int(m[1]), int(m[2]), int(m[3]), m[4], start, end))
    return out


def read_motif_logs(folder: Path) -> list[MotifRecord]:
    """The motif logs ember wrote in ``folder`` (one file, or one per sst MPI rank)."""
    files = sorted(folder.glob(f"{MOTIF_LOG}.log")) + sorted(folder.glob(f"{MOTIF_LOG}-*.log"))
    if not files:
        raise SstOutputError(f"{folder / (MOTIF_LOG + '.log')}: ember wrote no motif log "
                             "(did the ranks' engines get the motifLog parameter?)")
    return [r for f in files for r in parse_motif_log(f.read_text(), str(f))]


def parse_pingpong(stdout: str) -> list[PingPongReport]:
    """Every ``PingPong`` result line of sst's stdout, in order (one per size)."""
    return [PingPongReport(m[1], int(m[2]), float(m[3]) * 1e3, int(m[4]), int(m[5]),
                           float(m[6]) * 1e3) for m in _PINGPONG.finditer(stdout)]


def rank_finish_ps(records: list[MotifRecord], ranks: int, motifs: int, job: int = 0,
                   source: str = "motifs.log") -> list[int]:
    """Each rank's last motif end; every rank must have logged each of its ``motifs`` motifs
    exactly once (otherwise the program did not finish, or the log is not this run's)."""
    seen: dict[tuple[int, int], int] = {}
    for r in records:
        if r.job != job:
            continue
        if not 0 <= r.rank < ranks or not 0 <= r.motif < motifs:
            raise SstOutputError(f"{source}: rank {r.rank} motif {r.motif}: outside the "
                                 f"job's {ranks} ranks x {motifs} motifs")
        if (r.rank, r.motif) in seen:
            raise SstOutputError(f"{source}: rank {r.rank} logged motif {r.motif} twice")
        seen[(r.rank, r.motif)] = r.end_ps
    missing = [(k, m) for k in range(ranks) for m in range(motifs) if (k, m) not in seen]
    if missing:
        k, m = missing[0]
        raise SstOutputError(f"{source}: rank {k} never finished motif {m} ({len(missing)} "
                             f"rank-motif pairs missing): the program did not complete")
    return [max(seen[(k, m)] for m in range(motifs)) for k in range(ranks)]


def program_summary(records: list[MotifRecord], ranks: int, motifs: int, operations: int,
                    messages: int, source: str = "motifs.log") -> ProgramSummary:
    """Completion and per-rank finish from the motif log; ``operations`` and ``messages`` are
    the program's own counts (ember reports neither)."""
    finish = rank_finish_ps(records, ranks, motifs, source=source)
    return ProgramSummary(ranks=ranks, operations=operations, messages=messages,
                          completion_ns=max(finish) / 1e3,
                          rank_finish_ns=[f / 1e3 for f in finish])


def summarize_programs(cfg: SstConfig, rows: list[StatRow], out: SstStdout,
                       programs: ProgramSummary) -> PointSummary:
    """The summary of a closed-loop point: ``programs`` from the motif log, traffic from
    merlin's statistics over the whole run (the window of a rank-program run, as on our
    engine).  Bytes and packets are what crossed merlin, firefly's headers and rendezvous
    control messages included; per-message and end-to-end latencies are not reported by
    ember, so they are ``None``."""
    c = count(cfg, rows)
    sim_ns = (out.simulated_time_s or 0.0) * 1e9
    capacity = sim_ns / 1e9 * cfg.nic_bandwidth * cfg.nodes
    net_mean = c.latency_sum / c.latency_count if c.latency_count else None
    return PointSummary(
        offered_load=c.injected_bytes / capacity if capacity > 0 else None,
        accepted_load=c.delivered_bytes / capacity if capacity > 0 else 0.0,
        packets_generated=c.latency_count, packets_measured=c.latency_count,
        packets_delivered=c.delivered_packets,
        bytes_injected=c.injected_bytes, bytes_delivered=c.delivered_bytes,
        latency_ns=LatencyStats(mean=None, p50=None, p99=None, max=None),
        network_latency_ns=LatencyStats(mean=net_mean, p50=None, p99=None,
                                        max=float(c.latency_max) if c.latency_count else None),
        mean_hops=c.hops / c.delivered_packets if c.delivered_packets else None,
        nonminimal_fraction=None, message_completion_ns_mean=None,
        simulated_time_ns=sim_ns, events=0, packet_hops=c.hops, busiest_links=[],
        programs=programs)
