"""Laws of the ``on_off`` process's period lengths, parameterised by their mean.

A burst's size is its length times the burst rate, so a heavy-tailed ``on`` law gives the
heavy-tailed burst sizes of production background traffic (Willinger et al.'s ON/OFF sources:
Pareto periods of shape 1 < alpha < 2 make the aggregate self-similar).  Each law is given by
its *mean* (the process's ``on`` or ``off``) and a shape, so the offered load does not depend
on the shape:

* ``exponential`` (the default): memoryless;
* ``pareto`` with ``shape`` alpha > 1: Pareto type I, P(X > x) = (x_m / x)^alpha for
  x >= x_m = mean (alpha - 1) / alpha; alpha <= 1 has no mean (refused), 1 < alpha <= 2 an
  infinite variance (the heavy tail wanted);
* ``lognormal`` with ``sigma`` in (0, 4] (of the log): mu = ln(mean) - sigma^2 / 2.

Stationarity: the period in progress when a node starts is not an ordinary period (a long
one is more likely to cover a given instant), so the first one is drawn as the stationary
renewal process has it: ``U x L`` with ``L`` from the length-biased law (density
x f(x) / mean) and U uniform.  Length-biasing keeps each family: Pareto(x_m, alpha) becomes
Pareto(x_m, alpha - 1), lognormal(mu, sigma) lognormal(mu + sigma^2, sigma), exponential a
Gamma(2) whose U-fraction is again the exponential (drawn directly, as before the laws).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from federation import Params

LawName = Literal["exponential", "pareto", "lognormal"]
#: the widest lognormal accepted
SIGMA_MAX = 4.0


class PeriodLaw(Params):
    """A law of period lengths with a given mean: exponential, pareto or lognormal.

    Written ``exponential`` (the bare name), ``{law: pareto, shape: alpha}`` with alpha > 1,
    or ``{law: lognormal, sigma: s}`` with 0 < s <= 4."""

    law: LawName = Field("exponential", description="the family of the period lengths")
    shape: float | None = Field(
        None, description="pareto: the tail exponent alpha, P(X > x) ~ x^-alpha; above 1 (a "
        "finite mean); 1 < alpha <= 2 has an infinite variance (heavy-tailed bursts)")
    sigma: float | None = Field(
        None, description="lognormal: the standard deviation of the period's logarithm, > 0")

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data: Any) -> Any:
        return {"law": data} if isinstance(data, str) else data

    @field_validator("shape")
    @classmethod
    def _shape(cls, v: float | None, info: Any) -> float | None:
        law = info.data.get("law")
        if v is None:
            return v
        if law != "pareto":
            raise ValueError(f"only a pareto law has a shape, not {law!r}")
        if not np.isfinite(v) or v <= 1:
            raise ValueError(f"a pareto shape must be above 1, got {v!r}: at or below 1 the "
                             f"periods have an infinite mean, so the load could not be kept")
        return v

    @field_validator("sigma")
    @classmethod
    def _sigma(cls, v: float | None, info: Any) -> float | None:
        law = info.data.get("law")
        if v is None:
            return v
        if law != "lognormal":
            raise ValueError(f"only a lognormal law has a sigma, not {law!r}")
        if not np.isfinite(v) or v <= 0 or v > SIGMA_MAX:
            raise ValueError(f"a lognormal sigma must be in (0, {SIGMA_MAX}], got {v!r} (above "
                             f"{SIGMA_MAX}, a run cannot sample the law's mean: its periods spread "
                             f"over more than e^{SIGMA_MAX**2:.0f})")
        return v

    @model_validator(mode="after")
    def _complete(self) -> PeriodLaw:
        # the field validators do not run on absent fields: a pareto without its shape
        if self.law == "pareto" and self.shape is None:
            raise ValueError("a pareto law needs its shape (the tail exponent alpha > 1)")
        if self.law == "lognormal" and self.sigma is None:
            raise ValueError("a lognormal law needs its sigma (> 0)")
        return self

    @property
    def exponential(self) -> bool:
        return self.law == "exponential"

    def draw(self, rng: np.random.Generator, mean: float, size: int) -> np.ndarray:
        """``size`` period lengths of this law with ``mean`` (any unit)."""
        if self.law == "pareto":
            a = float(self.shape)  # type: ignore[arg-type]
            return mean * (a - 1) / a * (1.0 + rng.pareto(a, size))
        if self.law == "lognormal":
            s = float(self.sigma)  # type: ignore[arg-type]
            return rng.lognormal(np.log(mean) - s * s / 2, s, size)
        return rng.exponential(mean, size)

    def draw_residual(self, rng: np.random.Generator, mean: float, size: int) -> np.ndarray:
        """``size`` remaining lengths of the period in progress at a random instant of the
        stationary process: a uniform fraction of a length-biased period."""
        if self.law == "pareto":
            a = float(self.shape)  # type: ignore[arg-type]
            biased = mean * (a - 1) / a * (1.0 + rng.pareto(a - 1, size))
        elif self.law == "lognormal":
            s = float(self.sigma)  # type: ignore[arg-type]
            biased = rng.lognormal(np.log(mean) + s * s / 2, s, size)
        else:
            return rng.exponential(mean, size)
        return rng.random(size) * biased

    def variance(self, mean: float) -> float:
        """The variance of a period (``inf`` for a pareto of shape <= 2), for tolerances."""
        if self.law == "pareto":
            a = float(self.shape)  # type: ignore[arg-type]
            xm = mean * (a - 1) / a
            return float("inf") if a <= 2 else xm * xm * a / ((a - 1) ** 2 * (a - 2))
        if self.law == "lognormal":
            s = float(self.sigma)  # type: ignore[arg-type]
            return float(np.expm1(s * s) * mean * mean)
        return mean * mean
