"""Reading a secret given inline or by file path (Kubernetes mounts Secrets as files)."""

from __future__ import annotations

from pathlib import Path

from athena.config import SettingsError

__all__ = ["read_file_setting", "secret_value"]


def read_file_setting(path: str, variable: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise SettingsError(f"{variable}: cannot read {path}: {exc.strerror}") from None


def secret_value(inline: str, path: str, variable: str) -> str:
    """The inline value, else the file's content stripped of surrounding whitespace, else empty."""
    if inline:
        return inline
    if path:
        return read_file_setting(path, f"{variable}_FILE").decode("utf-8").strip()
    return ""
