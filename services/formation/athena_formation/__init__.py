"""The formation service: chains out of segments, kept, searched, aged and erased.

Rooms: `forming` (FormChain), `search` (SearchMemory, GetChain, ListChains), `store` (MongoDB,
Milvus and the in-memory indexes), `lifecycle` (heat, archiver, erasure). `server` builds and runs
the process; `servicer` is the FormationService gRPC surface.
"""
