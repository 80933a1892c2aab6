"""Engine ``native``: the built-in packet-level engine (always available)."""

from __future__ import annotations

from federation import Engine, Params, hookimpl


class Native(Engine):
    """Packet-level discrete-event engine compiled with numba (see federation.engine)."""

    name = "native"

    class Params(Params):
        pass

    def run(self, job, progress=None):  # noqa: ANN001, ANN201
        from federation.engine.native import run_native

        return run_native(job, progress=progress)


@hookimpl
def federation_register_engines(register) -> None:  # noqa: ANN001
    register(Native)
