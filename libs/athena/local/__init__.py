"""Local dependency servers (Redis, the MongoDB-wire server, Milvus Lite paths) for `athena dev` and tests.

Production never uses this package: it points REDIS_URL, MONGODB_URI and VECTOR_INDEX_URI at real servers.
"""

from athena.local._processes import (
    LocalProcess,
    MongoWireServer,
    RedisServer,
    free_port,
    free_ports,
    wait_for_port,
)

__all__ = ["LocalProcess", "MongoWireServer", "RedisServer", "free_port", "free_ports", "wait_for_port"]
