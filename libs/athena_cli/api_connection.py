"""How the CLI's public-API commands (forget, export, rejections) connect: the options they share,
the client they open, and how a failed call is reported."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from athena.config import load_settings

if TYPE_CHECKING:
    from athena_client import AthenaClient

__all__ = ["ApiKey", "CaFile", "Target", "Timeout", "Token", "api_errors", "open_client"]

Target = Annotated[
    str | None, typer.Option("--target", help="Ingest address host:port (default: 127.0.0.1:INGEST_GRPC_PORT).")
]
Timeout = Annotated[float, typer.Option("--timeout", help="Deadline of each call, in seconds.")]
ApiKey = Annotated[
    str | None, typer.Option("--api-key", envvar="ATHENA_API_KEY", help="API key of the tenant (better: the env var).")
]
Token = Annotated[
    str | None, typer.Option("--token", envvar="ATHENA_TOKEN", help="JWT of the tenant, instead of an API key.")
]
CaFile = Annotated[
    Path | None, typer.Option("--ca-file", envvar="ATHENA_TLS_CA_FILE", help="PEM CA to trust: connect over TLS.")
]

_err = Console(stderr=True)


def open_client(
    target: str | None, *, timeout: float, api_key: str | None, token: str | None, ca_file: Path | None
) -> AthenaClient:
    from athena_client import AthenaClient, ClientOptions

    address = target or f"127.0.0.1:{load_settings().ingest_grpc_port}"
    return AthenaClient(
        address,
        options=ClientOptions(timeout=timeout),
        api_key=api_key,
        bearer_token=None if api_key else token,
        root_certificates=ca_file.read_bytes() if ca_file is not None else None,
    )


@contextmanager
def api_errors(call: str) -> Iterator[None]:
    """A failed call is one red line (its status and the fields it names) and exit code 1."""
    import grpc

    from athena_client import field_violations

    try:
        yield
    except grpc.RpcError as exc:
        violations = field_violations(exc)
        detail = "; ".join(f"{field}: {desc}" for field, desc in violations) if violations else exc.details()
        _err.print(f"[red]{call} failed ({exc.code().name}): {detail}[/red]")
        raise typer.Exit(1) from None
