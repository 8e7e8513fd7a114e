"""TLS credentials of the gRPC listeners and of the internal hop, from the settings."""

from __future__ import annotations

import grpc

from athena.auth._secrets import read_file_setting
from athena.config import Settings, SettingsError

__all__ = ["internal_channel_credentials", "server_credentials"]


def _own_pair(settings: Settings) -> tuple[bytes, bytes] | None:
    """(private key, certificate chain) of this service, or None when TLS is not configured."""
    if not settings.grpc_tls_cert_file:
        return None
    return (
        read_file_setting(settings.grpc_tls_key_file, "GRPC_TLS_KEY_FILE"),
        read_file_setting(settings.grpc_tls_cert_file, "GRPC_TLS_CERT_FILE"),
    )


def server_credentials(settings: Settings, *, internal: bool = False) -> grpc.ServerCredentials | None:
    """TLS for a listener when a certificate is configured; for the internal service (`internal`) with
    INTERNAL_TLS_CA_FILE set, client certificates signed by that CA are required (mTLS)."""
    pair = _own_pair(settings)
    client_ca = internal and bool(settings.internal_tls_ca_file)
    if pair is None:
        if client_ca:
            raise SettingsError(
                "INTERNAL_TLS_CA_FILE needs GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE (formation's own certificate)"
            )
        return None
    if not client_ca:
        return grpc.ssl_server_credentials([pair])
    ca = read_file_setting(settings.internal_tls_ca_file, "INTERNAL_TLS_CA_FILE")
    return grpc.ssl_server_credentials([pair], root_certificates=ca, require_client_auth=True)


def internal_channel_credentials(settings: Settings) -> grpc.ChannelCredentials | None:
    """How ingest and cognition reach formation: with INTERNAL_TLS_CA_FILE, TLS verifying formation by
    that CA and presenting this service's own certificate; otherwise plaintext."""
    if not settings.internal_tls_ca_file:
        return None
    ca = read_file_setting(settings.internal_tls_ca_file, "INTERNAL_TLS_CA_FILE")
    pair = _own_pair(settings)
    if pair is None:
        raise SettingsError(
            "INTERNAL_TLS_CA_FILE needs GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE (the client certificate for formation)"
        )
    key, chain = pair
    return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=chain)
