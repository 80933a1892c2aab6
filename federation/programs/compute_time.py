"""Compute times drawn from distributions: the many-node paper's phase 3 (Eyerman et al.).

Any compute phase of a workload may take its duration from a distribution instead of a
constant (:class:`ComputeTime`, a workload field)::

    compute: 10us                                        # constant
    compute: {dist: normal, mean: 10us, std: 1us}        # a draw below 0 is 0
    compute: {dist: lognormal, mean: 10us, std: 3us}     # the distribution's mean and std
    compute: {dist: uniform, low: 8us, high: 12us}
    compute: {dist: empirical, cdf: [[8us, 0], [9us, 0.5], [14us, 1]]}   # <= 100 bins
    compute: {profile: hpcg.yaml, phase: mg}             # clusters + pattern (below)

A *profile* file (YAML or JSON) holds what the paper's phase 2 measures: per compute phase,
clusters each with an empirical CDF of at most 100 bins, and the pattern in which the calls
of that phase visit the clusters (HPCG's multigrid ``0 1 2 2 2 1 0``, repeated)::

    unit: 1us                 # bare numbers in the CDFs are this (default 1s)
    phases:
      mg:
        clusters:
          - cdf: [[900, 0], [1000, 0.5], [1100, 1]]
          - cdf: [[110, 0], [130, 1]]
          - cdf: [[14, 0], [18, 1]]
        pattern: [0, 1, 2, 2, 2, 1, 0]

The k-th call of a phase on a rank takes cluster ``pattern[k mod len(pattern)]``.

**Sampling** (a workload's ``sampling``, the paper's two modes): ``variable`` draws per rank
and per call, by inverse-CDF sampling (linear within a CDF's bins), from a stream of its own
per phase spawned from the point's seed; ``constant`` gives every call its distribution's
mean (a profile's: the mean of the cluster the pattern names).  Durations are whole
picoseconds (rounded).  The programs are built once per point with the drawn durations in
them, so every engine (native, SimGrid) runs the same numbers.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_serializer, model_validator

from federation.errors import ConfigError
from federation.models.base import DocumentModel, DocumentPath, read_document, validate_model
from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
from federation.models.units import (
    _TIME_RE,
    PS_PER_S,
    Time,
    beyond_clock,
    format_time,
    parse_time,
)

#: most bins of an empirical CDF (the paper stores "at most 100 bins")
MAX_BINS = 100
Sampling = Literal["constant", "variable"]
_NEEDS: dict[str, tuple[str, ...]] = {
    "constant": ("value",), "normal": ("mean", "std"), "lognormal": ("mean", "std"),
    "uniform": ("low", "high"), "empirical": ("cdf",), "profile": ("profile", "phase"),
}


def _cdf_points(v: Any, unit: float = 1.0) -> list[tuple[float, float]]:
    """``[[time, probability], ...]``: times as Times (a bare number is ``unit`` seconds),
    probabilities numbers."""
    if not isinstance(v, list | tuple):
        raise ValueError("cdf must be a list of [time, cumulative probability] points")
    out = []
    for i, pt in enumerate(v):
        if not isinstance(pt, list | tuple) or len(pt) != 2:
            raise ValueError(f"cdf point {i} must be [time, cumulative probability], got {pt!r}")
        t, p = pt
        if isinstance(p, bool) or not isinstance(p, int | float) or not math.isfinite(p):
            raise ValueError(f"cdf point {i}: probability {p!r} is not a number")
        bare = isinstance(t, int | float) and not isinstance(t, bool)
        secs = t * unit if bare else parse_time(t)
        if bare and math.isfinite(t) and t >= 0 and math.isinf(secs):
            raise ValueError(f"cdf point {i}: time {t:g} x the unit {format_time(unit)} is "
                             f"beyond {CLOCK_LIMIT}")
        if not math.isfinite(secs) or secs < 0:
            raise ValueError(f"cdf point {i}: time {t!r} must be finite and not negative")
        out.append((float(secs), float(p)))
    check_cdf(out)
    return out


def check_in_clock(name: str, seconds: float) -> None:
    """A compute figure (``name``: ``compute``, ``mean``, ``the cdf's last time``) below the
    engine's clock range: past it, it can never be simulated (and 1e300 s once overflowed the
    conversions to picoseconds: a traceback instead of this refusal)."""
    if beyond_clock(seconds):
        raise ValueError(f"{name} {format_time(float(seconds))} is beyond {CLOCK_LIMIT}")


def check_cdf(points: list[tuple[float, float]]) -> None:
    """An empirical CDF: 2 to ``MAX_BINS + 1`` points, times strictly rising, probabilities
    in [0, 1], never falling, the last 1."""
    if not 2 <= len(points) <= MAX_BINS + 1:
        raise ValueError(f"cdf has {len(points)} points; give 2 to {MAX_BINS + 1} (at most "
                         f"{MAX_BINS} bins)")
    for i, (t, p) in enumerate(points):
        if not 0 <= p <= 1:
            raise ValueError(f"cdf point {i}: probability {p} is outside [0, 1]")
        if i and t <= points[i - 1][0]:
            raise ValueError(f"cdf point {i}: time {format_time(t)} does not rise after "
                             f"{format_time(points[i - 1][0])} (the times must increase)")
        if i and p < points[i - 1][1]:
            raise ValueError(f"cdf point {i}: probability {p} falls below {points[i - 1][1]} "
                             "(a CDF is not monotone)")
    if points[-1][1] != 1:
        raise ValueError(f"cdf ends at probability {points[-1][1]}, not 1")


class ComputeTime(DocumentModel):
    """A compute phase's duration: a constant (a bare time), or a distribution (see the
    module docstring).  Only the fields of its ``dist`` may be given."""

    dist: Literal["constant", "normal", "lognormal", "uniform", "empirical", "profile"] = \
        Field(description="the distribution; a mapping with 'profile' is a profile phase")
    value: Time | None = Field(None, description="constant: the duration")
    mean: Time | None = Field(None, description="normal, lognormal: the mean")
    std: Time | None = Field(None, description="normal, lognormal: the standard deviation")
    low: Time | None = Field(None, description="uniform: the lower bound")
    high: Time | None = Field(None, description="uniform: the upper bound")
    cdf: list[tuple[float, float]] | None = Field(
        None, description="empirical: [[time, cumulative probability], ...], times rising, "
        f"probabilities rising to 1, at most {MAX_BINS} bins")
    profile: DocumentPath | None = Field(None, description="a profile file (YAML/JSON), "
                                         "relative to the experiment file")
    phase: str | None = Field(None, description="profile: the phase of the file")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        """A bare time is a constant; a mapping with ``profile`` a profile phase."""
        if isinstance(v, dict):
            if "profile" in v and "dist" not in v:
                return {"dist": "profile", **v}
            return v
        if isinstance(v, ComputeTime):
            return v
        return {"dist": "constant", "value": v}

    @field_validator("cdf", mode="before")
    @classmethod
    def _points(cls, v: Any) -> Any:
        return None if v is None else _cdf_points(v)

    @model_validator(mode="after")
    def _fields_of_the_dist(self) -> ComputeTime:
        need = _NEEDS[self.dist]
        for name in need:
            if getattr(self, name) is None:
                raise ValueError(f"{name} is required for dist {self.dist}")
        extra = [n for n in ("value", "mean", "std", "low", "high", "cdf", "profile", "phase")
                 if n not in need and getattr(self, n) is not None]
        if extra:
            raise ValueError(f"{extra[0]} is not a parameter of dist {self.dist} (it takes "
                             f"{', '.join(need)})")
        if self.dist == "uniform" and self.high < self.low:  # type: ignore[operator]
            raise ValueError("uniform: high is below low")
        figures = [(n, getattr(self, n)) for n in need if n in ("value", "mean", "std", "low",
                                                                 "high")]
        if self.cdf is not None:
            figures.append(("the cdf's last time", self.cdf[-1][0]))
        for name, secs in figures:
            check_in_clock("compute" if name == "value" else name, secs)
        if self.dist == "lognormal" and self.mean == 0 and self.std > 0:  # type: ignore[operator]
            raise ValueError("lognormal: a mean of 0 allows no std above 0 (a lognormal draw "
                             "is positive); give a mean above 0, or a constant 0")
        return self

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        """A plain time is a constant: the schema says so beside the mapping."""
        return {"anyOf": [{"type": "number", "minimum": 0},
                          {"type": "string", "pattern": _TIME_RE.pattern},
                          handler(core_schema)]}

    @model_serializer(mode="wrap")
    def _only_given(self, handler: Any) -> dict[str, Any]:
        """Written back (``resolved`` in results.json) with the fields of its ``dist`` only."""
        return {k: v for k, v in handler(self).items() if v is not None}

    def is_zero(self) -> bool:
        """True when every draw is 0 (the phase can be left out)."""
        return self.dist == "constant" and self.value == 0


# --------------------------------------------------------------------------- profile files


class _UnitCdf:
    """A profile's CDF still to be read with its file's ``unit`` (by :class:`ProfileCluster`,
    so an error names its place: ``phases.mg.clusters.1.cdf``)."""

    def __init__(self, raw: Any, unit: float) -> None:
        self.raw, self.unit = raw, unit


class ProfileCluster(DocumentModel):
    cdf: list[tuple[float, float]] = Field(description="[[time, cumulative probability], "
                                           f"...], at most {MAX_BINS} bins")
    weight: float | None = Field(None, description="the cluster's share of the calls "
                                 "(informational)")

    @field_validator("cdf", mode="before")
    @classmethod
    def _points(cls, v: Any) -> Any:
        points = _cdf_points(v.raw, v.unit) if isinstance(v, _UnitCdf) else _cdf_points(v)
        check_in_clock("the cdf's last time", points[-1][0])  # as an 'empirical' cdf's
        return points


class ProfilePhase(DocumentModel):
    clusters: list[ProfileCluster] = Field(min_length=1)
    pattern: list[int] = Field(default_factory=lambda: [0], min_length=1,
                               description="cluster of each call, in order, repeated")

    @model_validator(mode="after")
    def _pattern_names_clusters(self) -> ProfilePhase:
        for i, c in enumerate(self.pattern):
            if not 0 <= c < len(self.clusters):
                raise ValueError(f"pattern[{i}] names cluster {c}, but the phase has "
                                 f"{len(self.clusters)} (0 .. {len(self.clusters) - 1})")
        return self


class ProfileFile(DocumentModel):
    unit: Time = Field(1.0, description="what a bare number in the CDFs means (default: 1 s)")
    phases: dict[str, ProfilePhase] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _cdfs_in_unit(cls, v: Any) -> Any:
        """Bare numbers in the CDFs are ``unit``s: hand each CDF its unit."""
        if not isinstance(v, dict) or not isinstance(v.get("phases"), dict):
            return v
        try:
            unit = parse_time(v.get("unit", 1.0))
        except ValueError:
            return v  # the unit's own error is reported by its field
        out = dict(v)
        out["phases"] = {}
        for name, ph in v["phases"].items():
            if isinstance(ph, dict) and isinstance(ph.get("clusters"), list):
                ph = dict(ph)
                ph["clusters"] = [
                    {**c, "cdf": _UnitCdf(c["cdf"], unit)} if isinstance(c, dict) and "cdf" in c
                    else c for c in ph["clusters"]]
            out["phases"][name] = ph
        return out


def read_profile(path: str | Path, field: str) -> ProfileFile:
    """A profile file, validated; errors name the file and the field (``phases.mg.pattern``)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"no such profile file: {p}" if not p.exists() else
                          f"{p} is not a regular file", path=field)
    return validate_model(ProfileFile, read_document(p), str(p))


# --------------------------------------------------------------------------- sampling


class PhaseSampler:
    """Durations of one compute phase: :meth:`draw` gives the next call of each rank."""

    def __init__(self, spec: ComputeTime, sampling: Sampling, rng: np.random.Generator,
                 n_ranks: int, field: str) -> None:
        self.spec, self.sampling, self.rng, self.field = spec, sampling, rng, field
        self.calls = np.zeros(n_ranks, dtype=np.int64)
        self.pattern: np.ndarray | None = None
        self.clusters: list[list[tuple[float, float]]] = []
        if spec.dist == "profile":
            prof = read_profile(spec.profile, f"{field}.profile")  # type: ignore[arg-type]
            if spec.phase not in prof.phases:
                raise ConfigError(f"the profile {spec.profile} has no phase {spec.phase!r} "
                                  f"(it has {', '.join(sorted(prof.phases))})",
                                  path=f"{field}.phase")
            ph = prof.phases[spec.phase]  # type: ignore[index]
            self.clusters = [c.cdf for c in ph.clusters]
            self.pattern = np.asarray(ph.pattern, dtype=np.int64)
        self.mean_s = self._means()

    def _means(self) -> np.ndarray:
        """Mean seconds per cluster (one entry for a plain distribution)."""
        s = self.spec
        if s.dist == "constant":
            return np.array([s.value])
        if s.dist in ("normal", "lognormal"):
            if s.dist == "normal" and s.std > 0:  # type: ignore[operator]
                # the mean of max(0, X): what the draws average once negatives become 0
                m, sd = s.mean, s.std
                z = m / sd  # type: ignore[operator]
                phi = math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
                return np.array([m * 0.5 * math.erfc(-z / math.sqrt(2)) + sd * phi])
            return np.array([s.mean])
        if s.dist == "uniform":
            return np.array([(s.low + s.high) / 2])  # type: ignore[operator]
        cdfs = self.clusters if s.dist == "profile" else [s.cdf]
        return np.array([cdf_mean(c) for c in cdfs])  # type: ignore[arg-type]

    def draw(self, ranks: np.ndarray) -> np.ndarray:
        """int64 picoseconds for the next call of each of ``ranks`` (distinct ranks)."""
        ranks = np.asarray(ranks, dtype=np.int64)
        k = ranks.shape[0]
        cluster = np.zeros(k, dtype=np.int64)
        if self.pattern is not None:
            cluster = self.pattern[self.calls[ranks] % self.pattern.shape[0]]
        self.calls[ranks] += 1
        if self.sampling == "constant":
            secs = self.mean_s[cluster]
        else:
            secs = self._variable(cluster, k)
        ps = np.floor(np.maximum(secs, 0.0) * PS_PER_S + 0.5)
        if ps.size and not float(ps.max()) < TIME_LIMIT_PS:
            raise ConfigError(f"a draw of {format_time(float(ps.max()) / PS_PER_S)} is beyond "
                              f"{CLOCK_LIMIT}", path=self.field)
        return ps.astype(np.int64)

    def _variable(self, cluster: np.ndarray, k: int) -> np.ndarray:
        s, rng = self.spec, self.rng
        if s.dist == "constant":
            return np.full(k, float(s.value))
        if s.dist == "normal":
            return s.mean + s.std * rng.standard_normal(k)  # type: ignore[operator]
        if s.dist == "lognormal":
            m, sd = float(s.mean), float(s.std)  # type: ignore[arg-type]
            if m == 0:
                return np.zeros(k)
            sigma2 = lognormal_sigma2(m, sd)
            return np.exp(math.log(m) - sigma2 / 2 + math.sqrt(sigma2) *
                          rng.standard_normal(k))
        if s.dist == "uniform":
            return rng.uniform(float(s.low), float(s.high), k)  # type: ignore[arg-type]
        u = rng.random(k)
        cdfs = self.clusters if s.dist == "profile" else [s.cdf]
        out = np.empty(k)
        for c, cdf in enumerate(cdfs):
            sel = cluster == c
            if sel.any():
                out[sel] = inverse_cdf(cdf, u[sel])  # type: ignore[arg-type]
        return out


def lognormal_sigma2(mean: float, std: float) -> float:
    """sigma² of the lognormal of ``mean`` and ``std`` (both > 0, std may be 0):
    ``log(1 + (std / mean)²)``, in logarithms, since ``(std / mean)²`` overflows a float when
    the mean is tiny beside the std (a mean of 1e-200 s beside 1 us was a traceback)."""
    if std == 0:
        return 0.0
    return float(np.logaddexp(0.0, 2 * (math.log(std) - math.log(mean))))


def cdf_mean(points: list[tuple[float, float]]) -> float:
    """Mean of a piecewise-linear CDF: the mass at the first point, then each bin's
    probability at its midpoint."""
    t = np.array([p[0] for p in points])
    p = np.array([p[1] for p in points])
    return float(p[0] * t[0] + np.sum(np.diff(p) * (t[:-1] + t[1:]) / 2))


def inverse_cdf(points: list[tuple[float, float]], u: np.ndarray) -> np.ndarray:
    """Seconds for uniforms ``u`` in [0, 1): below the first probability, the first time;
    else linear within the bin ``u`` falls in (empty bins are never chosen)."""
    t = np.array([p[0] for p in points])
    p = np.array([p[1] for p in points])
    i = np.clip(np.searchsorted(p, u, side="right") - 1, 0, len(points) - 2)
    width = p[i + 1] - p[i]
    frac = np.where(width > 0, (u - p[i]) / np.where(width > 0, width, 1), 0.0)
    out = t[i] + np.clip(frac, 0, 1) * (t[i + 1] - t[i])
    return np.where(u < p[0], t[0], out)


class ComputeDraws:
    """The samplers of one workload's compute phases: each phase its own stream, spawned
    from the point's generator in the order the phases are made (so a workload that makes
    its phases in a fixed order draws the same durations for the same seed)."""

    def __init__(self, rng: np.random.Generator, sampling: Sampling, n_ranks: int) -> None:
        self.rng, self.sampling, self.n_ranks = rng, sampling, n_ranks

    def phase(self, spec: ComputeTime, field: str) -> PhaseSampler:
        return PhaseSampler(spec, self.sampling, self.rng.spawn(1)[0], self.n_ranks,
                            f"workload.{field}")


def as_compute(v: Any) -> ComputeTime:
    """A :class:`ComputeTime` from a workload field's value (a number of seconds, a time
    string, a mapping, or one already)."""
    return v if isinstance(v, ComputeTime) else ComputeTime.model_validate(v)


__all__ = ["MAX_BINS", "ComputeDraws", "ComputeTime", "PhaseSampler", "ProfileFile",
           "Sampling", "as_compute", "cdf_mean", "check_cdf", "check_in_clock", "inverse_cdf",
           "lognormal_sigma2", "read_profile"]
