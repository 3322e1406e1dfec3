"""A rollout split over several tavli-engine servers (docs/rollout.md, "Split rollouts").

    tavli-rollout --replicas HOST:PORT,HOST:PORT --position ID [--trials 1296]
                  [--dice 6-5] [--plies 0] [--seed 0] [--truncation 0]
                  [--slice-trials 0] [--json]

The trials 0..trials are split into ranges (one per replica, or of --slice-trials
each), the ranges run at the same time on the replicas (`RolloutRequest.range`, one
at a time per replica), and the first replica merges their partial results
(`RolloutRequest.merge`): bit for bit the answer of one server running all the
trials. A replica may be a DNS name that resolves to several addresses (a
Kubernetes headless Service): each address is used. The same helper as
`tavli-engine rollout --replicas` (src/replicas.rs), which prints the same text.

From Python:

    from tavli.v1 import engine_pb2 as pb
    from tavli_client.split import split_rollout
    r = split_rollout(["10.0.0.5:50051", "10.0.0.6:50051"],
                      pb.RolloutRequest(position_id=ID, trials=46656, seed=1),
                      progress=lambda done, total: print(done, total))
"""

import argparse
import collections
import json
import socket
import sys
import threading

import grpc
from google.protobuf import json_format

from tavli.v1 import engine_pb2 as pb
from tavli.v1 import engine_pb2_grpc as rpc

DEFAULT_TRIALS = 1296


def split_trials(trials, slices):
    """`trials` trials as `slices` consecutive (first, count) ranges whose sizes differ
    by at most 1 (the larger first); no empty range."""
    slices = max(1, min(slices, max(trials, 1)))
    base, extra = divmod(trials, slices)
    out, first = [], 0
    for k in range(slices):
        count = base + (1 if k < extra else 0)
        if count:
            out.append((first, count))
        first += count
    return out


def resolve(targets):
    """The replica addresses of `targets` (a list, or a comma-separated string, of
    HOST:PORT): a name stands for every address it resolves to (sorted), duplicates
    kept once in the order of first appearance."""
    if isinstance(targets, str):
        targets = targets.split(",")
    out = []
    for t in (t.strip() for t in targets):
        if not t:
            continue
        host, sep, port = t.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"replica {t!r}: give HOST:PORT")
        host = host.strip("[]")
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
        addrs = sorted({(i[0], i[4][0]) for i in infos})
        for family, ip in addrs:
            a = f"[{ip}]:{port}" if family == socket.AF_INET6 else f"{ip}:{port}"
            if a not in out:
                out.append(a)
    if not out:
        raise ValueError(f"no replica in {targets!r}")
    return out


class SliceError(RuntimeError):
    """A slice failed: the replica, the range and the gRPC error."""


def split_rollout(targets, request, slice_trials=0, progress=None, channel=grpc.insecure_channel):
    """Rolls out `request` (a RolloutRequest with position, dice, plies, trials (0:
    1296), seed, truncation; no range or merge) over the replicas `targets` (see
    `resolve`) and returns the merged last RolloutResponse: bit for bit the last
    update of one rollout of all the trials with `range` 0..trials (`partial`
    included). `progress(done, total)` is called as trials finish (from worker
    threads, one call at a time); `channel(target)` makes the channels (plaintext by
    default). A failed slice raises SliceError naming the replica and the range."""
    if request.HasField("range") or len(request.merge):
        raise ValueError("a split rollout sets range and merge itself")
    replicas = resolve(targets)
    total = request.trials or DEFAULT_TRIALS
    slices = len(replicas) if not slice_trials else -(-total // slice_trials)
    ranges = split_trials(total, max(slices, min(len(replicas), total)))
    queue = collections.deque(enumerate(ranges))
    done = [0] * len(ranges)
    partials = [None] * len(ranges)
    errors = []
    lock = threading.Lock()

    def worker(target):
        stub = rpc.TavliEngineStub(channel(target))
        while True:
            with lock:
                if errors or not queue:
                    return
                k, (first, count) = queue.popleft()
            req = pb.RolloutRequest()
            req.CopyFrom(request)
            req.trials = 0
            req.range.first, req.range.count = first, count
            req.report_every = -(-count // 50)
            last = None
            try:
                for u in stub.Rollout(req):
                    last = u
                    with lock:
                        done[k] = u.trials
                        if progress:
                            progress(sum(done), total)
            except grpc.RpcError as e:
                with lock:
                    errors.append(SliceError(f"replica {target}, trials {first}..{first + count}: {e.code().name}: {e.details()}"))
                return
            if last is None or not last.done or not last.HasField("partial"):
                with lock:
                    errors.append(SliceError(f"replica {target}, trials {first}..{first + count}: no final update with its partial sums"))
                return
            with lock:
                partials[k] = last.partial

    threads = [threading.Thread(target=worker, args=(t,), daemon=True) for t in replicas[: len(ranges)]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    merge = pb.RolloutRequest()
    merge.CopyFrom(request)
    merge.trials = 0
    merge.report_every = 0
    merge.merge.extend(partials)
    stub = rpc.TavliEngineStub(channel(replicas[0]))
    try:
        (answer,) = list(stub.Rollout(merge))
    except grpc.RpcError as e:
        raise SliceError(f"replica {replicas[0]}, merge: {e.code().name}: {e.details()}") from e
    return answer


def text(r):
    """The text `tavli-engine rollout` prints for a last update."""
    p, se = r.probabilities, r.standard_errors
    lines = []
    if r.HasField("play"):
        lines.append(f"play: {r.play.notation}")
    lines.append(
        f"equity {r.equity:+.3f} ± {r.equity_standard_error:.3f}  win {p.win:.3f} ± {se.win:.3f}  "
        f"win-mars {p.win_mars:.3f} ± {se.win_mars:.3f}  lose {p.lose:.3f} ± {se.lose:.3f}  "
        f"lose-mars {p.lose_mars:.3f} ± {se.lose_mars:.3f}  draw {p.draw:.3f} ± {se.draw:.3f}  "
        f"({r.trials} trials, {r.evaluator}, {r.plies} plies)"
    )
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="tavli-rollout", description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicas", required=True, help="HOST:PORT,HOST:PORT,... (names stand for all their addresses)")
    ap.add_argument("--position", required=True, help="a Position ID")
    ap.add_argument("--dice", help="the roll of the side to move, e.g. 6-5")
    ap.add_argument("--plies", type=int, default=0)
    ap.add_argument("--trials", type=int, default=DEFAULT_TRIALS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--truncation", type=int, default=0)
    ap.add_argument("--slice-trials", type=int, default=0, help="trials per slice (0: one slice per replica)")
    ap.add_argument("--json", action="store_true", help="print the merged update as proto3 JSON")
    a = ap.parse_args(argv)
    req = pb.RolloutRequest(position_id=a.position, plies=a.plies, trials=a.trials, seed=a.seed, truncation=a.truncation)
    if a.dice:
        d1, d2 = (int(x) for x in a.dice.split("-"))
        req.dice.die1, req.dice.die2 = d1, d2
    tty = sys.stderr.isatty()

    def progress(done, total):
        if tty:
            print(f"\r{done}/{total} trials", end="", file=sys.stderr, flush=True)

    try:
        r = split_rollout(a.replicas, req, a.slice_trials, progress)
    except (SliceError, ValueError, OSError) as e:
        print(f"tavli-rollout: {e}", file=sys.stderr)
        return 2
    if tty:
        print(file=sys.stderr)
    r.ClearField("partial")
    if a.json:
        print(json.dumps(json_format.MessageToDict(r), indent=2, sort_keys=True))
    else:
        sys.stdout.write(text(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
