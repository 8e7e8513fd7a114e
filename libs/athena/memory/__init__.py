"""Compatibility name of the public API's generated code, which lives in the client (athena_client.memory)."""
