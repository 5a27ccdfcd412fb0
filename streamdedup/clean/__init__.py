"""Cleaning: bytes -> text (charset), HTML -> main text (extraction), text -> normal form."""
