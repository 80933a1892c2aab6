"""SST adapter: the same machine and experiment files as an SST merlin configuration, run by
``sst`` as a subprocess, with its statistics read back into our results schema.

* :func:`~.config.build_config` -- a point as the ``.py`` configuration ``sst`` runs, or a
  :class:`~federation.errors.ConfigError` naming the field merlin cannot express exactly;
* :func:`~.launch.run_sst` -- ``sst`` (optionally under an MPI launcher) with a time limit;
* :func:`~.results.parse_stats_csv`, :func:`~.results.parse_stdout` -- its output read back.

See ``docs/sst.md`` for the parameter mapping, what is refused and why.
"""

from __future__ import annotations

from .config import build_config
from .options import SstOptions
from .script import SstConfig
from .topologies import Refusal, SstNetwork

__all__ = ["Refusal", "SstConfig", "SstNetwork", "SstOptions", "build_config"]
