"""Helpers of the security tests: a scratch CA made with `cryptography` (no key is committed), RSA
keys for RS256, and the in-process services' handle. (A module of its own: test modules import it,
never a conftest, whose name is shared by every test folder.)"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from athena.auth import bearer_credential_interceptors, public_auth_interceptor
from athena.config import Settings
from athena.grpc_util import ServiceHost
from athena.internal.v1 import formation_pb2_grpc
from athena_cli.stack import StackCredentials
from athena_client import AsyncAthenaClient, ClientOptions
from athena_client.memory.v1 import memory_pb2, memory_pb2_grpc
from athena_formation.server import Formation

__all__ = [
    "BuildSettings",
    "Issued",
    "RsaKeys",
    "ScratchCA",
    "Services",
    "StartGateway",
    "StartIngest",
    "StartServices",
    "memory_gateway",
]


# --- certificates ---------------------------------------------------------------------------------


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@dataclass
class Issued:
    cert_file: Path
    key_file: Path

    @property
    def cert(self) -> bytes:
        return self.cert_file.read_bytes()

    @property
    def key(self) -> bytes:
        return self.key_file.read_bytes()


@dataclass
class ScratchCA:
    """A throw-away certificate authority issuing server and client certificates for 127.0.0.1/localhost."""

    folder: Path
    name: str = "athena-test-ca"
    _key: ec.EllipticCurvePrivateKey = field(init=False)
    _cert: x509.Certificate = field(init=False)

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, self.name)])
        now = dt.datetime.now(dt.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        self.ca_file.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    @property
    def ca_file(self) -> Path:
        return self.folder / f"{self.name}.pem"

    @property
    def ca(self) -> bytes:
        return self.ca_file.read_bytes()

    def issue(self, name: str, *, server: bool) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH] if server else [usage]
                ),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )
        issued = Issued(self.folder / f"{name}.pem", self.folder / f"{name}.key")
        issued.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        issued.key_file.write_bytes(_pem_key(key))
        issued.key_file.chmod(0o600)
        return issued


@dataclass
class RsaKeys:
    private_pem: bytes
    public_file: Path


# --- services in this process ------------------------------------------------------------------------


@dataclass
class Services:
    """Formation and ingest of one test, with the credentials they accept."""

    settings: Settings
    credentials: StackCredentials
    formation: Formation
    ingest: ServiceHost

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.ingest.bound_port}"

    @property
    def formation_target(self) -> str:
        return f"127.0.0.1:{self.formation.host.bound_port}"

    def client(self, tenant_id: str, **kwargs: Any) -> AsyncAthenaClient:
        """A client carrying an HS256 JWT of `tenant_id`."""
        options = ClientOptions(timeout=30, max_attempts=1)
        return AsyncAthenaClient(
            self.target, options=options, bearer_token=self.credentials.token_for(tenant_id), **kwargs
        )

    def formation_channel(self) -> grpc.aio.Channel:
        """A plaintext channel to formation carrying the internal credential (unary and streaming calls)."""
        return grpc.aio.insecure_channel(
            self.formation_target, interceptors=bearer_credential_interceptors(self.credentials.internal_token)
        )

    def formation_stub(self, channel: grpc.aio.Channel) -> formation_pb2_grpc.FormationServiceStub:
        return formation_pb2_grpc.FormationServiceStub(channel)


StartServices = Callable[..., Awaitable[Services]]
StartIngest = Callable[..., Awaitable[ServiceHost]]
BuildSettings = Callable[..., Settings]


# --- MemoryService with a servicer of the test's own ---------------------------------------------------

MEMORY_SERVICE = memory_pb2.DESCRIPTOR.services_by_name["MemoryService"]


def memory_gateway(
    settings: Settings,
    servicer: memory_pb2_grpc.MemoryServiceServicer,
    *,
    generic_handlers: Sequence[grpc.GenericRpcHandler] = (),
) -> ServiceHost:
    """A ServiceHost serving MemoryService with `servicer` behind the production interceptors (metrics,
    error mapping, the public API's authentication from `settings`): the security layer alone, on a
    free port of 127.0.0.1, without ingest's stores."""

    def register(server: grpc.aio.Server) -> None:
        memory_pb2_grpc.add_MemoryServiceServicer_to_server(servicer, server)
        server.add_generic_rpc_handlers(tuple(generic_handlers))

    return ServiceHost(
        name="memory-gateway",
        port=0,
        bind_host="127.0.0.1",
        service_names=(MEMORY_SERVICE.full_name,),
        register=register,
        reflection=False,
        grace=1.0,
        auth=public_auth_interceptor(settings, [MEMORY_SERVICE]),
    )


StartGateway = Callable[..., Awaitable[ServiceHost]]
