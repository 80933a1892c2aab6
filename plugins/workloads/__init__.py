"""Built-in workloads: open-loop traffic (synthetic, messages) and rank programs (built-in
skeletons, GOAL and TI files), each registered through the ``federation`` entry-point group."""
