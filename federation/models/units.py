"""Quantities with units, as written in machine and experiment files.

Three dimensions occur in network descriptions: data size, time and data rate.  A value is either
a plain number in the base unit (bytes, seconds, bytes per second) or a string such as
``"5.25GiB/s"``, ``"100Gb/s"``, ``"100ns"``, ``"1.5us"``, ``"8KiB"`` or ``"512B"``.

Why not pint: pint reads ``b`` as *barn* and ``Gb`` as giga-barn, and its symbol table is far
larger than the three dimensions we need; a wrong unit must be rejected with a message that lists
what *is* accepted, which a 60-line table does better.

Conventions (the ones network papers use):

* ``B`` is a byte, ``b`` a bit.  ``KiB, MiB, GiB, TiB`` are binary (1024**n); ``kB, KB, MB, GB, TB``
  and ``kb, Mb, Gb, Tb`` are decimal (1000**n).
* Rates are a size over ``/s``; ``bps`` and ``Bps`` suffixes are accepted too.
* Times: ``s, ms, us, µs, ns, ps`` and ``cycles`` are *not* accepted (give a time).

Internally the engine keeps time in integer picoseconds (:data:`PS_PER_S`) so that event order
never depends on float rounding.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

from federation.errors import ConfigError
from federation.models.limits import (
    CLOCK_LIMIT,
    MAX_BANDWIDTH,
    MAX_BUFFER_BYTES,
    MAX_PACKET_BYTES,
    TIME_LIMIT_PS,
    TIME_LIMIT_S,
)

PS_PER_S = 10**12

_SIZE_PREFIX = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}
_TIME_UNIT = {
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
    "ps": 1e-12,
}
_NUM = r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
_PREFIX = r"(?P<prefix>Ki|Mi|Gi|Ti|k|K|M|G|T|)"
_SIZE_RE = re.compile(rf"^{_NUM}\s*{_PREFIX}(?P<unit>B|b|bit|bits|byte|bytes)$")
_RATE_RE = re.compile(
    rf"^{_NUM}\s*(?P<prefix>Ki|Mi|Gi|Ti|k|K|M|G|T|)(?P<unit>B|b|bit|bits|byte|bytes)(?:/s|ps)$"
)
_TIME_RE = re.compile(rf"^{_NUM}\s*(?P<unit>s|ms|us|µs|ns|ps)$")


def _size_in_bytes(prefix: str, unit: str, num: float) -> float:
    factor = _SIZE_PREFIX[prefix]
    if unit in ("b", "bit", "bits"):
        return num * factor / 8.0
    return num * factor


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return None


def parse_size(value: Any) -> float:
    """Return a data size in bytes from ``512``, ``"512B"``, ``"8KiB"`` or ``"1Mb"``."""
    num = _number(value)
    if num is None:
        if not isinstance(value, str):
            raise ValueError(f"expected a size such as '8KiB' or a number of bytes, got {value!r}")
        m = _SIZE_RE.match(value.strip())
        if not m:
            raise ValueError(
                f"{value!r} is not a size: write a number with B (bytes) or b (bits) and an "
                "optional prefix k, M, G, T (decimal) or Ki, Mi, Gi, Ti (binary), e.g. '8KiB'"
            )
        num = _size_in_bytes(m["prefix"], m["unit"], float(m["num"]))
    _check_finite(num, value)
    return num


def parse_rate(value: Any) -> float:
    """Return a data rate in bytes per second from ``"5.25GiB/s"``, ``"100Gb/s"`` or a number."""
    num = _number(value)
    if num is None:
        if not isinstance(value, str):
            raise ValueError(
                f"expected a rate such as '100Gb/s' or bytes per second, got {value!r}")
        m = _RATE_RE.match(value.strip())
        if not m:
            raise ValueError(
                f"{value!r} is not a data rate: write a size per second such as '5.25GiB/s' "
                "(bytes) or '100Gb/s' (bits), prefixes k, M, G, T or Ki, Mi, Gi, Ti"
            )
        num = _size_in_bytes(m["prefix"], m["unit"], float(m["num"]))
    _check_finite(num, value)
    return num


def parse_time(value: Any) -> float:
    """Return a duration in seconds from ``"100ns"``, ``"1.5us"`` or a number of seconds."""
    num = _number(value)
    if num is None:
        if not isinstance(value, str):
            raise ValueError(
                f"expected a time such as '100ns' or a number of seconds, got {value!r}")
        m = _TIME_RE.match(value.strip())
        if not m:
            raise ValueError(
                f"{value!r} is not a time: write a number with s, ms, us, ns or ps, e.g. '100ns'"
            )
        num = float(m["num"]) * _TIME_UNIT[m["unit"]]
    _check_finite(num, value)
    return num


def _check_finite(num: float, value: Any) -> None:
    if not math.isfinite(num):
        raise ValueError(f"{value!r} is not a finite quantity")


def seconds_to_ps(seconds: float) -> int:
    """Round a duration to integer picoseconds, the engine's clock unit.

    Unchecked: for durations already known to be in range (a field of type :data:`ClockTime`
    or :data:`PositiveClockTime`, or one checked before).  A duration a user wrote (or
    computed from what a user wrote, such as flops over a host speed) goes through
    :func:`clock_ps`, which refuses what the engine's clock cannot hold."""
    return int(round(seconds * PS_PER_S))


#: how far a duration's picoseconds may be from a whole number and still count as one: a
#: float's rounding (8.8 s is 8.8e12 ps to a thousandth), not a part of a picosecond
WHOLE_PS_SLACK = 0.01


def is_whole_ps(seconds: float) -> bool:
    """Whether ``seconds`` is a whole number of picoseconds, up to a float's rounding
    (``1.1ns`` is; ``1.0000004us``, 1,000,000.4 ps, is not)."""
    ps = float(seconds) * PS_PER_S
    return abs(ps - round(ps)) <= WHOLE_PS_SLACK


def beyond_clock(seconds: float) -> bool:
    """True when ``seconds``, rounded to picoseconds, is not below the engine's clock range
    (:data:`~federation.models.limits.TIME_LIMIT_PS`), or is not a number."""
    return not float(seconds) * PS_PER_S + 0.5 < TIME_LIMIT_PS


def clock_ps(seconds: float, what: str, source: str | None = None,
             path: str | None = None) -> int:
    """``seconds`` as integer picoseconds, or the clock-range refusal.

    The one conversion of user durations to engine time: a duration that is not finite, is
    negative or reaches the engine's clock range (:data:`federation.models.limits.TIME_LIMIT_PS`) is
    refused as a :class:`~federation.errors.ConfigError` ``"<what> <duration> is beyond the
    engine's clock range"`` naming ``source`` and ``path``.  Without it, ``1e22`` flops or a
    host speed of ``1e-300`` became an ``OverflowError`` deep inside NumPy (or, worse, an
    int64 that wrapped to a plausible time).
    """
    try:
        ps = float(seconds) * PS_PER_S
    except (TypeError, ValueError, OverflowError):  # not a number, or an int beyond float
        ps = math.nan
    if math.isnan(ps) or ps < 0:
        raise ConfigError(f"{what} {seconds!r} s is not a duration >= 0", source=source,
                          path=path)
    if beyond_clock(seconds):
        raise ConfigError(f"{what} {format_time(seconds)} is beyond {CLOCK_LIMIT}",
                          source=source, path=path)
    return int(round(ps))


def format_rate(bytes_per_s: float) -> str:
    """Human-readable rate in GiB/s (the unit HPC network papers quote)."""
    return f"{bytes_per_s / 2**30:.3g}GiB/s"


def format_count(n: float) -> str:
    """A count (bytes, picoseconds) as its digits, or, from 10**15 on, 4 significant digits
    (``1e+300``, not 301 digits of a float's binary expansion)."""
    if abs(n) < 10**15:
        return f"{n:.0f}" if isinstance(n, float) else str(n)
    try:
        return f"{float(n):.4g}"
    except OverflowError:  # an int beyond a float
        return f"{Decimal(n):.4g}"


def format_time(seconds: float) -> str:
    """Human-readable time with an SI prefix chosen for the magnitude."""
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= factor:
            return f"{seconds / factor:.4g}{unit}"
    return f"{seconds / 1e-12:.4g}ps"


def _nonneg(parse):  # noqa: ANN001, ANN202 - small validator factory
    def check(value: Any) -> float:
        num = parse(value)
        if num < 0:
            raise ValueError(f"must not be negative, got {value!r}")
        return num

    return check


def _positive(parse):  # noqa: ANN001, ANN202
    def check(value: Any) -> float:
        num = parse(value)
        if num <= 0:
            raise ValueError(f"must be positive, got {value!r}")
        return num

    return check


def _in_clock(check):  # noqa: ANN001, ANN202
    """``check``, then the clock range: a time inside a run (a job's start, a burst's mean
    length, a sampling interval) past the clock can never be simulated, and 1e300 s
    overflowed the conversion to picoseconds (a traceback instead of this refusal)."""
    def bounded(value: Any) -> float:
        num = check(value)
        if beyond_clock(num):
            raise ValueError(f"{format_time(num)} is past {CLOCK_LIMIT}")
        return num

    return bounded


_SCHEMA_SIZE = WithJsonSchema(
    {"anyOf": [{"type": "number"}, {"type": "string", "pattern": _SIZE_RE.pattern}],
     "description": "bytes, or a string such as '8KiB', '512B', '1Mb'"}
)
def _whole_bytes(limit: int | None):  # noqa: ANN202
    def check(value: Any) -> float:
        num = parse_size(value)
        if num != int(num) or num < 1:
            raise ValueError(
                f"must be a whole number of bytes, at least 1 (got {value!r} = {num:g} B)")
        if limit is not None and num > limit:
            raise ValueError(f"{value!r} = {format_count(num)} B is more than the engine "
                             f"stores in a packet ({limit} B)")
        return num

    return check


def _buffer(value: Any) -> float:
    """A positive buffer size the engine's int64 credit counters hold (at most
    :data:`~federation.models.limits.MAX_BUFFER_BYTES`): a larger one wrapped in the
    conversion to int64 and the run reported a false deadlock."""
    num = _positive(parse_size)(value)
    if num > MAX_BUFFER_BYTES:
        raise ValueError(f"{value!r} = {num:.4g} B is more than the engine's credit counters "
                         f"hold per VC (2**60 = {MAX_BUFFER_BYTES} B)")
    return num


def too_fast(bytes_per_s: float) -> str:
    """Why a bandwidth above :data:`~federation.models.limits.MAX_BANDWIDTH` is refused (the
    end of the message, after the value)."""
    return (f"is more than the engine's clock resolves: a byte would take "
            f"{PS_PER_S / bytes_per_s:.3g} ps, less than its clock unit (1 ps: times are whole "
            "picoseconds), so a one-byte packet's transmission would round to 0 or 1 ps; at "
            f"most {MAX_BANDWIDTH:.0e} B/s (1 TB/s, one byte per ps)")


def _bandwidth(value: Any) -> float:
    """A positive link or NIC bandwidth the engine's clock resolves (at most
    :data:`~federation.models.limits.MAX_BANDWIDTH`, one byte per picosecond)."""
    num = _positive(parse_rate)(value)
    if num > MAX_BANDWIDTH:
        raise ValueError(f"{value!r} = {num:.4g} B/s {too_fast(num)}")
    return num


_SCHEMA_RATE = WithJsonSchema(
    {"anyOf": [{"type": "number"}, {"type": "string", "pattern": _RATE_RE.pattern}],
     "description": "bytes per second, or a string such as '5.25GiB/s', '100Gb/s'"}
)
_SCHEMA_TIME = WithJsonSchema(
    {"anyOf": [{"type": "number"}, {"type": "string", "pattern": _TIME_RE.pattern}],
     "description": "seconds, or a string such as '100ns', '1.5us'"}
)
_SER = PlainSerializer(lambda v: v, return_type=float)

#: A size in bytes (>= 0); accepts '8KiB'.
Size = Annotated[float, BeforeValidator(_nonneg(parse_size)), _SER, _SCHEMA_SIZE]
#: A strictly positive size in bytes.
PositiveSize = Annotated[float, BeforeValidator(_positive(parse_size)), _SER, _SCHEMA_SIZE]
#: An input buffer per VC: positive, at most :data:`federation.models.limits.MAX_BUFFER_BYTES`.
BufferSize = Annotated[float, BeforeValidator(_buffer), _SER, WithJsonSchema({
    "anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": MAX_BUFFER_BYTES},
              {"type": "string", "pattern": _SIZE_RE.pattern}],
    "description": "bytes (at most 2**60), or a string such as '8KiB'"})]
#: A whole number of bytes, at least 1 (message sizes).
ByteCount = Annotated[float, BeforeValidator(_whole_bytes(None)), _SER, _SCHEMA_SIZE]
#: A packet size: whole bytes from 1 to :data:`federation.models.limits.MAX_PACKET_BYTES`.
PacketSize = Annotated[float, BeforeValidator(_whole_bytes(MAX_PACKET_BYTES)), _SER,
                       WithJsonSchema({
                           "anyOf": [{"type": "integer", "minimum": 1,
                                      "maximum": MAX_PACKET_BYTES},
                                     {"type": "string", "pattern": _SIZE_RE.pattern}],
                           "description": "whole bytes from 1 to 2**31 - 1, or a string such "
                                          "as '512B', '4KiB'"})]
#: A strictly positive rate in bytes/s; accepts '100Gb/s'.
Rate = Annotated[float, BeforeValidator(_positive(parse_rate)), _SER, _SCHEMA_RATE]
#: A link or NIC bandwidth in bytes/s: positive, at most
#: :data:`federation.models.limits.MAX_BANDWIDTH` (1 TB/s); accepts '100Gb/s'.
Bandwidth = Annotated[float, BeforeValidator(_bandwidth), _SER, WithJsonSchema({
    "anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": MAX_BANDWIDTH},
              {"type": "string", "pattern": _RATE_RE.pattern}],
    "description": "bytes per second (at most 1e12, one byte per ps), or a string such as "
                   "'5.25GiB/s', '100Gb/s'"})]
#: A duration in seconds (>= 0); accepts '100ns'.
Time = Annotated[float, BeforeValidator(_nonneg(parse_time)), _SER, _SCHEMA_TIME]
#: A strictly positive duration in seconds.
PositiveTime = Annotated[float, BeforeValidator(_positive(parse_time)), _SER, _SCHEMA_TIME]


def _schema_clock_time(low: str) -> WithJsonSchema:
    return WithJsonSchema({
        "anyOf": [{"type": "number", low: 0, "exclusiveMaximum": TIME_LIMIT_S},
                  {"type": "string", "pattern": _TIME_RE.pattern}],
        "description": f"seconds (below {TIME_LIMIT_S:.4g}, the engine's clock range of 2**43 "
                       "ps), or a string such as '100ns', '1.5us'"})


#: A time inside a run, in seconds (>= 0): below the engine's clock range
#: (:data:`federation.models.limits.TIME_LIMIT_PS`), so :func:`seconds_to_ps` holds it.
ClockTime = Annotated[float, BeforeValidator(_in_clock(_nonneg(parse_time))), _SER,
                      _schema_clock_time("minimum")]
#: A strictly positive time inside a run: as :data:`ClockTime`, above 0.
PositiveClockTime = Annotated[float, BeforeValidator(_in_clock(_positive(parse_time))), _SER,
                              _schema_clock_time("exclusiveMinimum")]
