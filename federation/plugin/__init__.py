"""The plugin contract: what a plugin implements and how it is found.

Owns the hook specifications (``hookspecs``), the component base classes every topology,
routing, arbiter, QoS policy, workload and engine derives from (``components``), the registry
that loads built-in and third-party plugins alike (``registry``), and the JSON Schema of the
files as the installed plugins extend them (``jsonschema``).

May import: :mod:`federation.errors`, :mod:`federation.models`, :mod:`federation.network`,
:mod:`federation.programs`.  Plugins themselves are found by entry point, never imported here.
"""
