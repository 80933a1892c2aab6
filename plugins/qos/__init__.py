"""Built-in QoS policies."""
