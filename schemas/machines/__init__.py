"""Machine files of the reference papers (see each file's description)."""
