"""The news-feed view: "story -> its pages", folded from cluster events, kept current, resumable.

Every mode writes the same two light outputs next to the full records (no page body in either):
- verdict-only lines (`verdicts.jsonl`, the `pages.verdicts` topic): one per input record, with
  `id`, `url`, `fetch_time`, `duplicate_of_url` (file mode, when known), the input's Kafka
  `headers` (Kafka only; over 64 KiB, `headers_omitted`: `record.passed`) and the whole `dedup`
  object (status, duplicate_of, cluster_id, similarity, method, reason...: whatever it holds).
- cluster-view events (the compacted `pages.cluster_view` topic, key = page id): the page's
  `created` or `joined` event with its url, fetch time, status, duplicate_of, the earlier pages it
  is related to (`related_to`) and, if it bridged clusters, `merged`; a `late_match` (key
  `<page id> late <earlier id>`) when the global topology finds a match after the later page's
  verdict was out, a `late_related` (key `<page id> related <earlier id>`) when that match is
  only related. File mode folds the same events into `clusters.jsonl` (one line per current story).

`Stories` (`clusters.fold`) folds such events (and the `pages.clusters` events, which carry the
same types) into connected components, and tells which stories a story's pages are related to.
The fold does not depend on the order the events arrive in: a story is named by its earliest
cluster (by its page's fetch time), names included. `ClusterReader` (`clusters.reader`) keeps
`Stories` current from a topic and resumes from a consumer group's committed offsets;
`read_folder` reads a file-mode output folder.
"""

from __future__ import annotations

from streamdedup.clusters.fold import (
    CLUSTERS_FILE,
    EVENT_TYPES,
    MEMBER_FIELDS,
    VERDICTS_FILE,
    Event,
    Stories,
    complete_lines,
    fold_verdicts,
    page_fields,
    read_folder,
    table,
    verdict_line,
    view_event,
    view_key,
    when,
    write_stories,
)
from streamdedup.clusters.reader import ClusterReader, event_of, read_topic_stories

__all__ = ["CLUSTERS_FILE", "EVENT_TYPES", "MEMBER_FIELDS", "VERDICTS_FILE", "ClusterReader", "Event", "Stories",
           "complete_lines", "event_of", "fold_verdicts", "page_fields", "read_folder", "read_topic_stories", "table",
           "verdict_line", "view_event", "view_key", "when", "write_stories"]
