"""A Lua script called straight through EVALSHA, for the queue's per-task hot path."""

from __future__ import annotations

import hashlib
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import NoScriptError

__all__ = ["HotScript"]


class HotScript:
    """Like redis-py's registered Script, minus its per-call work: the caller passes the whole
    argument list (key count, keys, then ARGV), with the fixed parts encoded to bytes once, and the
    call goes to `execute_command` directly. A server that lost its script cache (restart, SCRIPT
    FLUSH) gets the script loaded again, as with Script."""

    def __init__(self, redis: Redis, script: str) -> None:
        self._redis = redis
        self._script = script
        self._sha = hashlib.sha1(script.encode()).hexdigest().encode()

    async def __call__(self, *numkeys_keys_and_args: Any) -> Any:
        try:
            return await self._redis.execute_command("EVALSHA", self._sha, *numkeys_keys_and_args)
        except NoScriptError:
            await self._redis.script_load(self._script)
            return await self._redis.execute_command("EVALSHA", self._sha, *numkeys_keys_and_args)
