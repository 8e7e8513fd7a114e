"""Connecting to Redis, and turning its outages into DependencyUnavailable."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

from redis.asyncio import Redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from athena.errors import DependencyUnavailable

__all__ = ["connect_redis", "redis_unavailable", "reply_bytes", "reply_bytes_list"]


def connect_redis(url: str, *, socket_timeout: float | None = 5.0) -> Redis:
    # Blocking queue reads (BLMOVE, 1 s) must fit inside socket_timeout.
    return Redis.from_url(
        url,
        socket_timeout=socket_timeout,
        socket_connect_timeout=3.0,
        health_check_interval=15,
        retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), 2),
        retry_on_error=[RedisConnectionError, RedisTimeoutError],
    )


@contextmanager
def redis_unavailable() -> Iterator[None]:
    try:
        yield
    except (RedisConnectionError, RedisTimeoutError, ConnectionError, OSError) as exc:
        raise DependencyUnavailable("redis", type(exc).__name__) from exc


# connect_redis never sets decode_responses, so every string reply is bytes; redis-py types them
# `bytes | str` because that option decides at run time. These say so to the type checker (no-ops).
def reply_bytes(reply: bytes | str) -> bytes:
    """A string reply (GET, HGET, LINDEX, ...) of a client that does not decode responses."""
    return cast(bytes, reply)


def reply_bytes_list(replies: list[bytes | str]) -> list[bytes]:
    """A list reply (LRANGE, ...) of a client that does not decode responses."""
    return cast(list[bytes], replies)
