"""Example client of the tavli.v1.TavliEngine gRPC service.

The generated modules are `tavli.v1.engine_pb2` (messages) and
`tavli.v1.engine_pb2_grpc` (`TavliEngineStub`); `tavli_client.example` lists the
plays of a roll, applies one and evaluates (`tavli-example`, or
`python -m tavli_client.example`). `tavli_client.channel` makes channels that
balance and retry by the project's gRPC service config
(deploy/grpc-service-config.json): `insecure_channel(target)`,
`secure_channel(target, credentials)`; `tavli_client.split` rolls a position out over
several servers and merges the slices (`split_rollout`, `tavli-rollout`).
"""
