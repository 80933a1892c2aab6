"""What the native engine can represent, in one place.

Every figure a run feeds the engine (times, sizes, rates, counts) is checked against these limits
*before* anything is allocated or simulated (see :mod:`federation.pipeline.preflight`), so that an
input the engine cannot hold is refused with a message naming the file and field, never wrapped
silently.

* **Clock.**  Event times are integer picoseconds kept in int64 heap keys ``time << 19 | seq``
  (see :mod:`federation.engine.events`), so a time must stay below ``2**43`` ps, about 8.8 s of
  simulated time.
* **Packet size.**  A packet's size is an int32 column of the engine's per-packet state row, so
  sizes are whole bytes from 1 to ``2**31 - 1``.
* **Buffer.**  A link's input buffer per VC is the int64 credit count its upstream port starts
  with (:mod:`federation.engine.credits`), and a port facing a NIC holds ``2**60`` credits as
  "unlimited" (``federation.engine.events.INF_CREDIT``), so a buffer is at most ``2**60`` B
  (about 1.15e18 B).  A larger one did not fit the conversion to int64 (above ``2**63``, the credits
  became garbage and the run reported a false deadlock) or would pass for a NIC's.
* **Bandwidth.**  A transmission lasts ``size x ps per byte`` rounded to whole picoseconds, and
  a packet may be one byte (a message's last packet, a 1 B message), so a link or a NIC moves
  at most one byte per picosecond, ``10**12`` B/s (1 TB/s).  Faster, a byte takes less than
  the clock unit and a small packet crosses in 0 ps (a port of unlimited bandwidth), and the
  synthetic workload's injection slot (one message's time at the NIC, whole picoseconds, at
  least 1) no longer follows the bandwidth, so it offers another load than the one asked
  (``nic.bandwidth: 1e300`` asked for about 1e+290 packets, and ``run`` blamed
  ``outputs.packets``).
"""

from __future__ import annotations

#: low bits of an event key that hold the scheduling sequence number
HEAP_SEQ_BITS = 19
#: first time (ps) the engine cannot represent: keys are ``time << 19 | seq`` in a signed int64
TIME_LIMIT_PS = 1 << (63 - HEAP_SEQ_BITS - 1)
#: the same limit in seconds, for messages
TIME_LIMIT_S = TIME_LIMIT_PS / 1e12
#: the clock range as every refusal before a run states it
CLOCK_LIMIT = (f"the engine's clock range ({TIME_LIMIT_PS} ps = {TIME_LIMIT_S:.4g} s of simulated "
               "time)")
#: largest packet, in bytes (int32 field of the packet state row)
MAX_PACKET_BYTES = 2**31 - 1
#: largest input buffer per VC, in bytes (the engine's int64 credit counters; a NIC's input,
#: unlimited, holds this many)
MAX_BUFFER_BYTES = 2**60
#: fastest link or NIC, in bytes per second: one byte per picosecond, the engine's clock unit
MAX_BANDWIDTH = 1e12
#: most points one sweep may expand to (each is validated and resolved before the run)
MAX_SWEEP_POINTS = 10_000
#: most messages one point may generate before the engine starts (a unit slip otherwise
#: exhausts memory first)
MAX_MESSAGES = 200_000_000
