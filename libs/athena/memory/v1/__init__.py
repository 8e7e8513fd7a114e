"""Compatibility name: `from athena.memory.v1 import memory_pb2` gives the client's module itself
(athena_client.memory.v1.memory_pb2), so memory.proto is still registered once per process. New code
imports athena_client.memory.v1."""

from athena_client.memory.v1 import memory_pb2, memory_pb2_grpc

__all__ = ["memory_pb2", "memory_pb2_grpc"]
