"""Tokens: words, sentences and their hashes, computed once per page and shared by all methods."""
