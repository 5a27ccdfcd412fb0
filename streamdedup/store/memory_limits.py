"""How much memory this process may still take: the kernel's MemAvailable and the cgroup's room.

The store asks before it loads, rebuilds or grows its in-memory index (`SignatureStore._check_memory`),
so that a store outgrowing its memory ends in one line naming the fix, not in the kernel's kill.
"""

from __future__ import annotations

from pathlib import Path


def available_bytes(proc: Path = Path("/proc"), cgroup: Path = Path("/sys/fs/cgroup")) -> int | None:
    """Memory this process may still take.

    The kernel's MemAvailable, or less if the process's cgroup (a container's limit) has less room
    left (`cgroup_room`); None if neither can be read."""
    found: list[int] = []
    try:
        for line in (proc / "meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError):
        pass
    room = cgroup_room(cgroup)
    if room is not None:
        found.append(room)
    return min(found) if found else None


# (limit, usage, statistics, the statistics' page cache lines): cgroup v2, then v1
_CGROUP_FILES = (("memory.max", "memory.current", "memory.stat", ("active_file", "inactive_file")),
                 ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes", "memory/memory.stat",
                  ("total_active_file", "total_inactive_file")))


def cgroup_room(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """Room left under the cgroup's memory limit.

    The limit less what the cgroup holds, its page cache aside (charged to the cgroup, reclaimed by
    the kernel before it kills anything: a worker restarted in its container finds the GBs of store
    files the last one read still charged); cgroup v2, else v1; None without a limit, or where none
    can be read."""
    for limit_file, usage_file, stat_file, cache_lines in _CGROUP_FILES:
        try:
            limit = (root / limit_file).read_text().strip()
            if limit == "max" or int(limit) >= 1 << 62:  # v1 says "no limit" as ~2^63
                return None
            usage = int((root / usage_file).read_text())
        except (OSError, ValueError):
            continue
        cache = 0
        try:
            for line in (root / stat_file).read_text().splitlines():
                name, _, value = line.partition(" ")
                if name in cache_lines:
                    cache += int(value)
        except (OSError, ValueError):
            pass
        return int(limit) - usage + cache
    return None

