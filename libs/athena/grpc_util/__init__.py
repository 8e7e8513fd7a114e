"""What every Athena gRPC service shares: error mapping, server assembly, health and shutdown."""

from athena.grpc_util._errors import ErrorMappingInterceptor, bad_request_violations, error_from_rpc, status_code_for
from athena.grpc_util._server import DependencyCheck, ServiceHost
from athena.grpc_util._wrapping import StreamBehaviour, UnaryBehaviour, UnaryWrappingInterceptor, as_stream_behaviour

__all__ = [
    "DependencyCheck",
    "ErrorMappingInterceptor",
    "ServiceHost",
    "StreamBehaviour",
    "UnaryBehaviour",
    "UnaryWrappingInterceptor",
    "as_stream_behaviour",
    "bad_request_violations",
    "error_from_rpc",
    "status_code_for",
]
