"""Verdicts: which earlier page, if any, a page duplicates, under a configurable policy."""
