"""Built-in topologies: one module per topology, each registered through the ``federation``
entry-point group exactly as a third-party one."""
