"""Workload ``messages``: an explicit list of messages (ping tests, closed-form checks, replays).

::

    workload:
      kind: messages
      messages:
        - {at: 0ns, src: 0, dst: 5, size: 512B}
        - {at: 1us, src: 3, dst: 0, size: 4KiB, class: high}

``class`` names one of ``machine.qos``'s traffic classes (default: the message's job's class,
else the policy's); on a machine of one class every message is in it.
"""

from __future__ import annotations

import numpy as np
from pydantic import ConfigDict, Field

from federation import Messages, Params, Workload, WorkloadContext, hookimpl
from federation.errors import ConfigError
from federation.models.units import ByteCount, ClockTime, seconds_to_ps
from federation.programs.checks import check_message_size


class MessageSpec(Params):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    at: ClockTime = Field(0.0, description="creation time at the source NIC")
    src: int = Field(ge=0, description="source node")
    dst: int = Field(ge=0, description="destination node")
    size: ByteCount = Field(description="whole bytes")
    class_: str | None = Field(None, alias="class", min_length=1,
                               description="traffic class (a name of machine.qos's classes)")


class MessagesParams(Params):
    messages: list[MessageSpec] = Field(min_length=1)


class ExplicitMessages(Workload):
    """A fixed list of messages given in the file."""

    name = "messages"
    Params = MessagesParams
    params: MessagesParams

    def check(self, ctx: WorkloadContext) -> None:
        """Every listed node exists (in a job: is one of the job's nodes), and every size is
        below the largest message and leaves its NIC within the clock range, before any point
        runs (a size of 1e300 B was a traceback in the run)."""
        n = ctx.network.n_nodes
        where = "the job has" if ctx.nodes is not None else "the machine has"
        for i, m in enumerate(self.params.messages):
            for field in ("src", "dst"):
                if getattr(m, field) >= n:
                    raise ConfigError(
                        f"node {getattr(m, field)} does not exist ({where} {n} nodes)",
                        path=f"workload.messages[{i}].{field}",
                    )
        big = max(range(len(self.params.messages)), key=lambda i: self.params.messages[i].size)
        check_message_size(int(self.params.messages[big].size), int(ctx.machine.packet_size),
                           ctx.nic_bandwidth, "size", f"workload.messages[{big}].size")
        self.classes(ctx)

    def classes(self, ctx: WorkloadContext) -> np.ndarray | None:
        """Each message's class number (-1: none given), ``None`` when no message names one
        or the machine has one class; a name not among ``machine.qos``'s classes is refused."""
        names = list(ctx.class_names)
        given = [m.class_ for m in self.params.messages]
        if len(names) <= 1 or all(g is None for g in given):
            return None
        for i, g in enumerate(given):
            if g is not None and g not in names:
                raise ConfigError(f"traffic class {g!r} is not one of machine.qos's classes "
                                  f"({', '.join(names)})", path=f"workload.messages[{i}].class")
        return np.array([names.index(g) if g is not None else -1 for g in given], np.int16)

    def message_times(self, ctx: WorkloadContext) -> np.ndarray:
        """The listed times: the preflight refuses a window none of them falls in before any
        point runs, as the run would once it generated them."""
        return np.array([seconds_to_ps(m.at) for m in self.params.messages], dtype=np.int64)

    def generate(self, ctx: WorkloadContext) -> Messages:
        self.check(ctx)
        ms = self.params.messages
        return Messages(
            time_ps=self.message_times(ctx),
            src=np.array([m.src for m in ms], dtype=np.int32),
            dst=np.array([m.dst for m in ms], dtype=np.int32),
            size=np.array([int(m.size) for m in ms], dtype=np.int64),
            cls=self.classes(ctx),
        ).sorted()


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(ExplicitMessages)
