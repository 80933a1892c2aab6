"""Figures and reports drawn from a run's output folder.

``federation plot`` and ``federation report`` read ``results.json`` and the per-point tables that
``federation run`` wrote and draw the figures the papers this project reproduces argue with:
latency and accepted load against offered load (saturation marked), link utilisation per class
and per router port, latency, hop and message-completion distributions, and one engine's curves
over another's.

The package is imported only by commands that draw: matplotlib (and the table readers) load on
first use, so ``federation run`` without ``--plot``, ``validate`` and the other commands start as
fast as before.  Modules:

* :mod:`federation.plots.data` reads result folders and groups points into series (no matplotlib);
* :mod:`federation.plots.curves` latency/throughput against load;
* :mod:`federation.plots.engines` one engine's curves over another's (cross-validation);
* :mod:`federation.plots.links` link utilisation per class and the router x port heatmap;
* :mod:`federation.plots.distributions` latency, hop-count and message-completion distributions;
* :mod:`federation.plots.jobs` each job's completion with the others and alone, its slowdown;
* :mod:`federation.plots.classes` the traffic classes' share of the busiest links over the run
  (``outputs.link_series``);
* :mod:`federation.plots.standard` the standard set of figures for one or more folders;
* :mod:`federation.plots.report` the self-contained HTML report.

Every drawing function returns the data it plotted (a small dataclass), so tests and callers can
check a figure against the result tables without reading pixels.

Stage: after *outputs*, reading them.  May import: :mod:`federation.results` (the validating
reader's models), :mod:`federation.pipeline` (a machine rebuilt from a point's ``resolved``
document), :mod:`federation.adapters` and everything below; never the CLI.
"""

#: Default saturation margin: a point is saturated when its accepted load is below its offered
#: load by more than this fraction of the offered load.  5 % is above the window-edge noise of
#: the shipped quickstart (accepted within 1.5 % of offered below saturation) and well below the
#: drop at saturation.  Defined here, without imports, so the CLI can show it as a default
#: without loading matplotlib.
DEFAULT_SATURATION_MARGIN = 0.05

#: Above this many routers the router x port heatmap is aggregated by group (one row per group).
HEATMAP_MAX_ROUTERS = 2048
