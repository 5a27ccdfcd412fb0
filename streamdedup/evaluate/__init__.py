"""Evaluation: labelled sets, metrics, the `eval` command and its report."""
