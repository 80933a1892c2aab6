"""Test support: SimGrid is a real dependency in CI, so its tests fail when it is missing.

QCEngine-style ``using(...)`` markers skip what is not installed; that would let CI pass with
no SimGrid test run at all.  :func:`require_simgrid` instead *fails* the test, unless the
environment says SimGrid is optional here (``FEDERATION_SIMGRID_OPTIONAL=1``, for developers
without it).  ``.ci/run`` never sets it.
"""

from __future__ import annotations

import os

import pytest

from federation.adapters.simgrid import locate

#: set to 1 to skip (instead of fail) SimGrid tests on a machine without SimGrid
ENV_OPTIONAL = "FEDERATION_SIMGRID_OPTIONAL"


def simgrid_optional() -> bool:
    return os.environ.get(ENV_OPTIONAL) == "1"


def require_simgrid() -> None:
    """Return if SimGrid is installed; else skip (optional here) or fail (the default)."""
    if locate.found():
        return
    if simgrid_optional():
        pytest.skip(f"SimGrid is not installed and {ENV_OPTIONAL}=1")
    pytest.fail(f"SimGrid is not installed: {locate.INSTALL_HINT}.  Its tests are required; "
                f"set {ENV_OPTIONAL}=1 to skip them on a machine without it", pytrace=False)
