"""Cross-simulator validation suites: ``federation crossval SUITE.yaml`` and a pytest plugin.

* :mod:`.models`: the suite document (scenarios x engines x metrics with tolerances) and the
  results document;
* :mod:`.metrics`: each metric computed from a run's outputs;
* :mod:`.run`: :class:`~federation.crossval.run.SuiteRunner` (runs each scenario on each engine
  once, compares);
* :mod:`.report`: the side-by-side table;
* :mod:`.pytest_plugin`: suites as tests (entry point ``pytest11``).

See ``docs/crossval.md``.

May import: :mod:`federation.pipeline` (running a scenario), :mod:`federation.adapters`
(SST points), :mod:`federation.results` and everything below; never the CLI.
"""

from federation.crossval.models import Suite, SuiteResult
from federation.crossval.run import SuiteRunner, load_suite

__all__ = ["Suite", "SuiteResult", "SuiteRunner", "load_suite"]
