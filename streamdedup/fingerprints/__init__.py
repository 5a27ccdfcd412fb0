"""Fingerprint methods: one file per method behind `FingerprintMethod`, named in `registry.py`."""
