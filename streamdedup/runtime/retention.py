"""Which of a partition's offsets retention deleted, told by the partition's start (low watermark).

A read that finds no record at an offset, or jumps past offsets, met records retention deleted, or
transaction markers (control records, never delivered), or records compaction removed. Only
retention moves the partition's start (its low watermark) past them: the offsets below it are the
deleted ones. Asked by the worker's check of a partition its store read before (`topic_reset`) and
by the Faust app's store rebuild (`faust_rebuild`).
"""

from __future__ import annotations


def deleted_by_retention(first: int, until: int, low: int) -> tuple[int, int] | None:
    """The part of offsets `first` up to (not including) `until` below the partition's start `low`, or None.

    `low`: the partition's low watermark, asked after the offsets were found missing (retention
    deleting on meanwhile makes this an upper bound)."""
    return (first, min(until, low)) if low > first else None


__all__ = ["deleted_by_retention"]
