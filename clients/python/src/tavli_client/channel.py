"""Channels to tavli-engine that balance and retry by the project's service config.

`SERVICE_CONFIG` is the JSON text of deploy/grpc-service-config.json (docs/deploy.md,
"Scaling out"), copied into this package when it is built: `round_robin` over every
address the target resolves to, client-side health checking of
`tavli.v1.TavliEngine` (grpc.health.v1 `Watch`), and retries of every
`tavli.v1.TavliEngine` call that ends `UNAVAILABLE` or `RESOURCE_EXHAUSTED` (at most
5 attempts, backoff from 50 ms to 1 s; the streaming calls Rollout and AnalyzeGame
only before their first answer). With a Kubernetes headless Service as target,

    ch = tavli_client.insecure_channel(
        "dns:///tavli-engine-headless.<namespace>.svc.cluster.local:50051")

spreads the calls over every ready pod and retries a call that a pod going away
refused. The service config given here is the channel's default: one that the DNS
resolver finds in a TXT record would take its place (gRPC's rules). Pass
`service_config=None` for a plain channel.
"""

from importlib import resources

import grpc

SERVICE_CONFIG: str = resources.files(__package__).joinpath("service_config.json").read_text()
"""The JSON text of deploy/grpc-service-config.json."""


def channel_options(options=(), service_config=SERVICE_CONFIG):
    """The channel arguments: `grpc.service_config` (unless None) and retries on,
    then `options` (a sequence of (name, value) pairs, e.g.
    `("grpc.dns_min_time_between_resolutions_ms", 1000)`), which win on a clash."""
    base = [("grpc.enable_retries", 1)]
    if service_config is not None:
        base.append(("grpc.service_config", service_config))
    names = {name for name, _ in options}
    return [(n, v) for n, v in base if n not in names] + list(options)


def insecure_channel(target, options=(), service_config=SERVICE_CONFIG):
    """`grpc.insecure_channel(target)` with the service config (plaintext, h2c).
    `target` is any gRPC target: `host:port`, `dns:///name:port`,
    `dns://DNS_HOST:DNS_PORT/name:port` (ask that DNS server)."""
    return grpc.insecure_channel(target, options=channel_options(options, service_config))


def secure_channel(target, credentials, options=(), service_config=SERVICE_CONFIG):
    """`grpc.secure_channel(target, credentials)` with the service config (TLS)."""
    return grpc.secure_channel(target, credentials, options=channel_options(options, service_config))
