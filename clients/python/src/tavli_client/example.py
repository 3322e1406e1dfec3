"""tavli.v1 from Python: list the plays of a roll, apply one, evaluate.

    tavli-example [--addr localhost:50051] [--ca ca.pem [--cert c.pem --key c.key]]

With --ca the channel is TLS (the server certificate checked against that CA);
with --cert and --key as well, mutual TLS. The channel balances and retries by the
project's service config (`tavli_client.channel`), so --addr may be a name with
many addresses, e.g. dns:///tavli-engine-headless.<namespace>.svc.cluster.local:50051.
clients/node/example.js prints the same lines; clients/ci.sh runs both against a
real server and compares them.
"""

import argparse
import sys

import grpc

from tavli.v1 import engine_pb2 as pb
from tavli.v1 import engine_pb2_grpc as rpc
from tavli_client import channel as tavli_channel

PORTES_START = "portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5"
BEAR_OFF = "portes/w/6:1,off:14/19:1,off:14"


def channel(args):
    if not args.ca:
        return tavli_channel.insecure_channel(args.addr)
    with open(args.ca, "rb") as f:
        ca = f.read()
    key = cert = None
    if args.cert:
        with open(args.key, "rb") as f:
            key = f.read()
        with open(args.cert, "rb") as f:
            cert = f.read()
    creds = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)
    options = [("grpc.ssl_target_name_override", args.server_name)] if args.server_name else []
    return tavli_channel.secure_channel(args.addr, creds, options=options)


def run(stub):
    dice = pb.Dice(die1=3, die2=1)
    # A gzip-compressed request (the server accepts gzip and zstd; it compresses its
    # answers only with --compress-responses true).
    plays = stub.ListLegalPlays(
        pb.ListLegalPlaysRequest(position_id=PORTES_START, dice=dice),
        timeout=10,
        compression=grpc.Compression.Gzip,
    )
    print(f"ListLegalPlays {PORTES_START} 3-1: {len(plays.plays)} plays")
    for p in plays.plays:
        print(f"  {p.notation:<12} {p.position.position_id}")

    applied = stub.ApplyPlay(
        pb.ApplyPlayRequest(position_id=PORTES_START, dice=dice, notation="8/5 6/5"), timeout=10
    )
    side = pb.Side.Name(applied.position.side_to_move)
    print(f"ApplyPlay 8/5 6/5: {applied.position.position_id}, {side} to move")

    after = applied.position.position_id
    ev = stub.Evaluate(
        pb.EvaluateRequest(position_id=after, dice=pb.Dice(die1=6, die2=5), plies=0), timeout=30
    )
    assert -2.0 <= ev.equity <= 2.0, ev.equity
    best = ev.ranked_plays[0]
    print(
        f"Evaluate 6-5, 0 plies: {ev.evaluator}, equity {ev.equity:+.3f}, "
        f"{len(ev.ranked_plays)} plays ranked, best {best.play.notation} ({best.equity:+.3f})"
    )

    exact = stub.Evaluate(pb.EvaluateRequest(position_id=BEAR_OFF), timeout=10)
    print(
        f"Evaluate {BEAR_OFF}: {exact.evaluator}, "
        f"win {exact.probabilities.win:.4f}, equity {exact.equity:+.3f}"
    )

    try:
        stub.ListLegalPlays(
            pb.ListLegalPlaysRequest(position_id=PORTES_START, dice=pb.Dice(die1=7, die2=1)), timeout=10
        )
        print("ListLegalPlays 7-1: answered (unexpected)")
        return 1
    except grpc.RpcError as e:
        print(f"ListLegalPlays 7-1: {e.code().name}: {e.details()}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--addr", default="localhost:50051", help="gRPC target: host:port or dns:///name:port")
    ap.add_argument("--ca", help="TLS: the CA certificate (PEM) that signed the server's")
    ap.add_argument("--cert", help="mutual TLS: this client's certificate (PEM)")
    ap.add_argument("--key", help="mutual TLS: this client's private key (PEM)")
    ap.add_argument("--server-name", help="TLS: the name to check in the server certificate")
    args = ap.parse_args(argv)
    if bool(args.cert) != bool(args.key):
        ap.error("--cert and --key go together")
    with channel(args) as ch:
        return run(rpc.TavliEngineStub(ch))


if __name__ == "__main__":
    sys.exit(main())
