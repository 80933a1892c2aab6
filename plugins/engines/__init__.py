"""Built-in engines: the native packet engine and the SimGrid and SST adapters."""
