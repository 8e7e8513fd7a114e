"""Tolerant parsing of model answers: accept the harmless wrappers models add, reject anything else."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["extract_json_object", "parse_bool_answer"]

# Reasoning models served through vLLM or Ollama may put their chain of thought inline.
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_WRAPPERS = " \t\r\n\"'`*_"
_TRAILING = ".!;:,"
# A model's answer is small; a pathological body must not make the JSON scan slow (each failed
# start can cost a pass over the text).
_MAX_SCAN_CHARS = 100_000
_MAX_START_ATTEMPTS = 64


def _strip_think(text: str) -> str:
    return _THINK.sub("", text)


def parse_bool_answer(text: str) -> bool | None:
    """The verdict in a true/false answer, or None.

    Accepts any case, surrounding whitespace, quotes, backticks, bold markers, trailing punctuation and
    an inline <think> block; anything else (including "yes", "maybe", "true or false") is None.
    """
    answer = _strip_think(text).strip(_WRAPPERS).rstrip(_TRAILING).strip(_WRAPPERS).lower()
    if answer == "true":
        return True
    if answer == "false":
        return False
    return None


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text`: the whole text, else one embedded in prose or code fences.

    Servers that ignore response_format wrap JSON in explanations or ```json fences. Only an object
    (dict) is accepted; the caller still validates its fields.
    """
    text = _strip_think(text)[:_MAX_SCAN_CHARS].strip()
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        pass
    else:
        return whole if isinstance(whole, dict) else None
    decoder = json.JSONDecoder()
    start = text.find("{")
    for _attempt in range(_MAX_START_ATTEMPTS):
        if start == -1:
            break
        try:
            obj, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            pass
        else:
            if isinstance(obj, dict):
                return obj
        start = text.find("{", start + 1)
    return None
