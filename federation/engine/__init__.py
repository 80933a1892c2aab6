"""The native packet-level engine: a compiled event loop of input-queued VC routers with credit
flow control, the rank programs run closed loop inside it, and the reduction of its delivery
records (``packet_stats``).

Stage: *engine*.  Owns what happens between a :class:`~federation.engine.native.NativeRun` and
its :class:`~federation.engine.native.RawResult`: events, router mechanics, the routing and
arbitration call-outs plugins compile into the loop (``api``, ``tables_route``, ``arbiters``),
rank-program state, and the loop's compilation and caching (``compile``).

May import: :mod:`federation.plugin` (the routing and arbiter contracts),
:mod:`federation.network`, :mod:`federation.programs`, :mod:`federation.results` (spooled
tables), :mod:`federation.models`, :mod:`federation.errors`.  Never the pipeline: the engine
sees one prepared run, not files or sweeps.
"""
