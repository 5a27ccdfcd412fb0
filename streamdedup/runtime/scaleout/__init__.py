"""Scale-out: one answer across many workers and partitions, built from Kafka's own parts.

    pages ──fingerprint──> pages.index  (explicit partition = hash(index key) mod P: every key lives
      (any partitioning)                 in exactly one index partition, wherever its page came from)
                      └──> pages.parts  (the page itself, partition = hash(page id) mod P)
    pages.index ──index──> pages.parts  (per index partition: which earlier/later pages share a key
                                         here and pass the policy; the page is filed for later ones)
    pages.parts ──gather─> pages.unique / pages.duplicates / pages.clusters   (one verdict per page)

`routing` holds the pure functions (partitions, the global page order), `messages` the wire
format, `index_stage` and `gather_stage` the two stateful steps (`gather_verdicts`: a gathered page's
verdict, pure), `stages` the glue the worker runs.
"""
