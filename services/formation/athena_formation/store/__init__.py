"""Where formation keeps chains, and the indexes they are found by.

MongoDB: `chain_store` (`cognitive_chains`, the formation records, the events' back-references) and
`chain_cache` (the chain documents searches read, kept in memory). Milvus: `vector_index` (one
embedding per chain) and `user_vectors` (the searched users' vectors in memory, for Milvus Lite).
In memory: `lexical_index` (BM25 over the chains' lexicons). Shared by the in-memory per-user
indexes: `agent_filter` (agents as integer codes) and `cache_eviction` (least recently searched
users go first).
"""
