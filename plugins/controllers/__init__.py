"""Built-in routing controllers (an experiment's ``routing_controller.kind``), one module
each: :mod:`.app_aware` (De Sensi et al.'s Algorithm 1) and :mod:`.by_size` (by message size,
the plugin-author example).  Registered through the ``controllers`` entry point, exactly as a
third-party plugin would be.
"""

from __future__ import annotations

from federation import hookimpl
from federation.plugins.controllers.app_aware import AppAware
from federation.plugins.controllers.by_size import BySize

__all__ = ["AppAware", "BySize"]


@hookimpl
def federation_register_controllers(register) -> None:  # noqa: ANN001
    register(AppAware)
    register(BySize)
