"""The page tokens of formation's paged answers (ListChains, ListRejections, GetChainEvents): an
offset, encoded so that clients treat it as opaque, and range-checked when it comes back."""

from __future__ import annotations

import base64
import json

from athena.errors import FieldViolation, InvalidArgument

__all__ = ["decode_offset", "encode_offset"]

_MAX_OFFSET = 2**31 - 1
"""A forged offset past int64 overflows MongoDB's skip (INTERNAL); no real page is past int32."""


def encode_offset(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode()


def decode_offset(token: str) -> int:
    """A token this service issued, as its offset (0 for none); INVALID_ARGUMENT naming page_token otherwise."""
    if not token:
        return 0
    try:
        offset = int(json.loads(base64.urlsafe_b64decode(token.encode()))["o"])
        if not 0 <= offset <= _MAX_OFFSET:
            raise ValueError
        return offset
    except Exception:
        raise InvalidArgument([FieldViolation("page_token", "is not a token this service issued")]) from None
