"""The engine's own clock-range guards, with the preflight bypassed.

``federation.pipeline.bounds.check_clock`` refuses inputs past the clock range before a run,
naming the file.  These tests hand :func:`~federation.engine.native.run_native` a job directly, as
an engine-level caller or a plugin's arithmetic could, and check that the engine itself refuses
to schedule an event past ``TIME_LIMIT_PS`` -- in particular one far enough past it that its
heap key ``time << 19`` would wrap to an earlier, plausible time -- and refuses operands that
would make its arithmetic wrap, always with a :class:`SimulationError` naming what and when.
"""

from __future__ import annotations

import numpy as np
import pytest

from federation.engine.native import LinkFigures, NativeRun, Packets, run_native
from federation.errors import FederationError, SimulationError
from federation.models.limits import HEAP_SEQ_BITS, TIME_LIMIT_PS
from federation.network import NetworkBuilder
from federation.network.routes import shortest_path_routes

BW = 5.12e9  # 512 B = 100 ns
S = 10**12  # ps per second


def job(latency: float, delay: float, created_ps: list[int], size: int = 512,
        bandwidth: float = BW, routers: int = 1) -> NativeRun:
    """Nodes 0 and 1 on router 0 (``routers=2``: node 1 on router 1, one cable between)."""
    b = NetworkBuilder(["cable"])
    b.add_routers(routers, radix=4)
    b.attach_nodes(0, 1)
    b.attach_nodes(routers - 1, 1)
    if routers == 2:
        b.add_link(0, 1, "cable")
    net = b.build()
    n = len(created_ps)
    packets = Packets(time_ps=np.array(created_ps, np.int64), src=np.zeros(n, np.int64),
                      dst=np.ones(n, np.int64), size=np.full(n, size, np.int64),
                      msg=np.arange(n), via=np.full(n, -1))
    fig = LinkFigures(bandwidth=bandwidth, latency=latency, buffer=max(4096, size))
    links = {c: fig for c in net.link_classes}
    return NativeRun(net, links, bandwidth, delay, 2, shortest_path_routes(net), packets)


def test_in_range_run_is_exact():
    """The guards change nothing inside the range: closed form 2 x (100 ns + 1 us) + 50 ns."""
    raw = run_native(job(1e-6, 5e-8, [0, 2 * S]))
    assert raw.pkt_deliver.tolist() == [2_250_000, 2 * S + 2_250_000]


def test_an_event_whose_key_would_wrap_is_refused_where_it_is_made():
    """Created at 8.7 s, terminal latency and router delay 4.5 s each: the tail reaches the
    router at 17.7 s, past 2^44 ps, where ``time << 19`` wraps in int64.  Before the push-time
    check the packet was delivered at 4.5 s, before it was created, and nothing noticed."""
    created = 8_700 * 10**9
    arrive = created + 102_400 + 2 * 4_500 * 10**9  # NIC serialisation at 5e9 B/s, lat, delay
    assert arrive >= 2 * TIME_LIMIT_PS  # the key would wrap ...
    assert (arrive << HEAP_SEQ_BITS) >= 2**63
    wrapped = ((arrive << HEAP_SEQ_BITS) % 2**64 - 2**64) >> HEAP_SEQ_BITS  # ... to this time
    assert 0 <= wrapped + 2**44 < TIME_LIMIT_PS
    with pytest.raises(SimulationError) as info:
        run_native(job(4.5, 4.5, [created], bandwidth=5e9))
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("the engine refused to schedule an ARRIVE event (packet 0 reaching "
                          "router 0 port 0) at 17.7s, while at t=8.7s: outside the engine's "
                          "clock range [0, 8.796s) (2^43 ps)"), msg


@pytest.mark.parametrize(("created_s", "kind", "what"), [
    # the packet's tail would reach the router past the limit (no wrap: 8.9 s < 2^44 ps)
    (8.5, "an ARRIVE", "packet 0 reaching router 0 port 0"),
    # it reaches the router in range (8.6 s); the credit for its input buffer, due back at the
    # NIC 0.2 s after it leaves the buffer, would not (scheduled before its delivery)
    (8.2, "a CREDIT", "a credit reaching node 0's NIC VC 0"),
])
def test_an_event_past_the_limit_is_named_with_its_time(created_s, kind, what):
    with pytest.raises(SimulationError, match=rf"^the engine refused to schedule {kind} event "
                       rf"\({what}\) at 8\.[89]\d*s, while at t=8\.[2-7]\d*s: outside the "
                       r"engine's clock range \[0, 8\.796s\) \(2\^43 ps\)"):
        run_native(job(0.2, 0.2, [int(created_s * S)]))


def test_a_credit_past_the_limit_is_refused():
    """Two routers: the credit for the cable's input buffer crosses the cable back and would
    arrive past the limit, while the packet itself is delivered in range."""
    created = TIME_LIMIT_PS - 3 * S
    with pytest.raises(SimulationError, match=r"refused to schedule a CREDIT event \(a credit "
                       r"reaching router 0 port 1 VC 0\) at 8\.\d+s"):
        run_native(job(1.0, 0.0, [created], routers=2))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"latency": 9.0}, r"latency on port 0 \('terminal' link\) takes 9s, outside the engine's "
                       r"clock range \[0, 8\.796s\)"),
    ({"latency": float("nan")}, r"latency on port 0 .* takes nan"),
    ({"bandwidth": 50.0}, r"serialisation of a packet on port 0 \('terminal' link, 512 B at 50 "
                          r"B/s\) takes 10\.24s, outside"),
    ({"delay": 10.0}, r"the router delay 10s is outside"),
    ({"size": 2**31}, r"packet 0 has 2147483648 bytes; the engine holds sizes of 1 to "
                      r"2147483647 bytes"),
    ({"created_ps": [-5]}, r"packet 0 is created at -5ps, outside the engine's clock range"),
    ({"created_ps": [0, TIME_LIMIT_PS]}, r"packet 1 is created at 8\.796s, outside"),
])
def test_operands_that_could_wrap_are_refused_before_the_run(kwargs, message):
    """Each operand of the kernel's time sums is checked, so the sums themselves cannot wrap
    before the push-time check sees them (a 2^31 B packet would wrap in the int32 size
    column; a NaN latency would become an arbitrary int64)."""
    args = {"latency": 1e-6, "delay": 5e-8, "created_ps": [0]} | kwargs
    with pytest.raises(SimulationError, match=message):
        run_native(job(**args))


def test_refusals_are_federation_errors_shown_as_one_line():
    with pytest.raises(FederationError) as info:
        run_native(job(4.5, 4.5, [8_700 * 10**9]))
    assert info.value.exit_code == 2
    assert len(str(info.value).splitlines()) == 1
