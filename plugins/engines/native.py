"""Engine ``native``: the built-in packet-level engine (always available)."""

from __future__ import annotations

from pydantic import Field

from federation import Engine, Params, hookimpl


class Native(Engine):
    """Packet-level discrete-event engine compiled with numba (see federation.engine)."""

    name = "native"

    class Params(Params):
        check_arbiter: bool = Field(
            True, description="check every answer of the output-port arbiter (a queue waiting "
            "for the port, the request before it, credit for its packet) and stop the run "
            "naming the arbiter when one is wrong; false compiles a loop without the check, "
            "for an arbiter you trust (the check costs 1-2 % of the loop's speed at most: "
            "docs/architecture.md, Call-outs)")
        nic_counters: bool = Field(
            True, description="count Aries' NIC counters (request packets and flits, stalls, "
            "request latency: the summaries' nics blocks and the nics table); false compiles a "
            "loop without them, which a routing controller overrides (it reads them)")

    def run(self, job, progress=None):  # noqa: ANN001, ANN201
        from federation.engine.native import run_native

        return run_native(job, progress=progress, check_arbiter=self.params.check_arbiter,
                          nic_counters=self.params.nic_counters)


@hookimpl
def federation_register_engines(register) -> None:  # noqa: ANN001
    register(Native)
