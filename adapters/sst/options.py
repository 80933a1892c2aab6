"""What ``engine: {kind: sst, ...}`` accepts: the program, how it is launched, model choices.

The model choices are here, not in the machine, because they exist only on the merlin side:
our engine moves whole packets and has no crossbar limit, so the flit size, the output buffer
and the crossbar speed-up have no machine field to come from.  Their defaults are the closest
merlin gets to our engine (one flit per packet, one packet of output buffer, crossbar at link
speed) and ``docs/sst.md`` says what each changes.
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from federation.adapters.process import MAX_TIMEOUT_S
from federation.models.base import Params
from federation.models.units import ByteCount, PositiveTime


class SstOptions(Params):
    """Engine parameters of ``sst``: program, launcher, time limit and merlin model choices."""

    sst_binary: str = Field("sst", description="the sst program: a name looked up on PATH, "
                            "or a path")
    launcher: list[str] | None = Field(
        None, description="argv prefix for an MPI launch, e.g. [mpirun, -n, '4']; default: "
        "none, or [mpirun, -n, ranks] when ranks > 1")
    ranks: int = Field(1, ge=1, description="MPI ranks: builds the default launcher; with a "
                       "launcher, give the count in it")
    threads: int = Field(1, ge=1, description="threads per rank (sst --num-threads)")
    timeout: PositiveTime = Field(3600.0, description="wall-clock limit of one sst run (at "
                                  "most a year); sst and all it started are stopped then")
    flit_size: ByteCount | None = Field(
        None, description="merlin flit size; default: the machine's packet_size (our engine "
        "moves and credits whole packets); must divide packet_size and every buffer")
    output_buf_size: ByteCount | None = Field(
        None, description="merlin output buffer per VC; default: one packet (our routers have "
        "none; merlin needs one); at least one packet (merlin waits for room for a whole one)")
    xbar_speedup: float = Field(
        1.0, ge=1.0, le=64.0, description="merlin xbar_bw as a multiple of the fastest link "
        "(our engine has no crossbar limit)")

    @field_validator("timeout")
    @classmethod
    def _timeout_in_range(cls, v: float) -> float:
        if v > MAX_TIMEOUT_S:
            raise ValueError(f"{v:g} s is longer than a year ({MAX_TIMEOUT_S:g} s), the "
                             "longest limit a run may be given")
        return v

    @model_validator(mode="after")
    def _ranks_or_launcher(self) -> SstOptions:
        """``ranks`` only builds the default launcher: beside a launcher it would be ignored
        silently, so the two are refused together (the launcher states its own count)."""
        if self.launcher and self.ranks != 1:
            raise ValueError(f"give either 'ranks' ({self.ranks}: it builds the default "
                             "launcher, mpirun -n <ranks>) or 'launcher' (which states its own "
                             "rank count), not both")
        if self.launcher and not all(a.strip() for a in self.launcher):
            raise ValueError("'launcher' needs a program and its arguments, none of them "
                             "empty")
        return self
