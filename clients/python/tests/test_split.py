"""tavli_client.split against real servers (run by clients/ci.sh):

    TAVLI_REPLICAS=127.0.0.1:20004,127.0.0.1:20005 python -m unittest discover -s clients/python/tests

The merged answer of a split rollout must be byte for byte the answer of the first
replica running all the trials (`range` 0..trials), for the three variants, with
dice, with truncation, at 1 ply, and in slices of uneven sizes.
"""

import os
import unittest

import grpc

from tavli.v1 import engine_pb2 as pb
from tavli.v1 import engine_pb2_grpc as rpc
from tavli_client.split import SliceError, resolve, split_rollout, split_trials

PORTES_START = "portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5"
REPLICAS = [r for r in os.environ.get("TAVLI_REPLICAS", "").split(",") if r]


def single(target, request, trials):
    """The last update of one server running trials 0..trials of `request`."""
    req = pb.RolloutRequest()
    req.CopyFrom(request)
    req.trials = 0
    req.range.first, req.range.count = 0, trials
    stub = rpc.TavliEngineStub(grpc.insecure_channel(target))
    return list(stub.Rollout(req))[-1]


def raw(m):
    return m.SerializeToString(deterministic=True)


class SplitTrials(unittest.TestCase):
    def test_even_ranges(self):
        self.assertEqual(split_trials(10, 3), [(0, 4), (4, 3), (7, 3)])
        self.assertEqual(split_trials(2, 5), [(0, 1), (1, 1)])
        self.assertEqual(split_trials(46656, 3), [(0, 15552), (15552, 15552), (31104, 15552)])


@unittest.skipUnless(len(REPLICAS) >= 2, "TAVLI_REPLICAS: two servers or more")
class SplitRollout(unittest.TestCase):
    def check(self, request, trials, slice_trials=0):
        seen = []
        merged = split_rollout(REPLICAS, request, slice_trials, lambda d, t: seen.append((d, t)))
        want = single(REPLICAS[0], request, trials)
        self.assertEqual(raw(merged), raw(want), f"{merged}\n{want}")
        self.assertEqual(merged.partial.range.count, trials)
        self.assertEqual(seen[-1], (trials, trials))
        self.assertEqual([d for d, _ in seen], sorted(d for d, _ in seen))
        return merged

    def test_portes_in_slices_of_uneven_sizes(self):
        r = pb.RolloutRequest(position_id=PORTES_START, trials=40, seed=3, truncation=8)
        m = self.check(r, 40)
        self.assertEqual((m.trials, m.done, m.evaluator), (40, True, "net-portes-v2"))
        self.assertGreater(m.equity_standard_error, 0)
        self.check(r, 40, slice_trials=7)

    def test_with_dice_and_the_other_variants(self):
        r = pb.RolloutRequest(position_id=PORTES_START, trials=24, seed=5, dice=pb.Dice(die1=3, die2=1))
        self.assertEqual(self.check(r, 24).play.notation, "8/5 6/5")
        r = pb.RolloutRequest(position_id="plakoto/w/24:15/1:15", trials=12, plies=1, truncation=4)
        self.check(r, 12)
        r = pb.RolloutRequest(position_id="fevga/w/24:15/12:15", trials=30, seed=8, truncation=12)
        self.check(r, 30, slice_trials=11)

    def test_a_finished_game(self):
        r = pb.RolloutRequest(position_id="portes/b/off:15/1:15", trials=10)
        m = split_rollout(REPLICAS, r)
        self.assertEqual((m.trials, m.equity, m.evaluator), (0, -2.0, "game-over"))

    def test_resolve_and_errors(self):
        port = REPLICAS[0].rsplit(":", 1)[1]
        self.assertIn(f"127.0.0.1:{port}", resolve(f"localhost:{port}"))
        self.assertEqual(resolve(",".join(REPLICAS + REPLICAS[:1])), REPLICAS)
        with self.assertRaises(ValueError):
            resolve("no-port")
        r = pb.RolloutRequest(position_id=PORTES_START, trials=10)
        with self.assertRaisesRegex(SliceError, "replica 127.0.0.1:1, trials"):
            split_rollout([REPLICAS[0], "127.0.0.1:1"], r)
        bad = pb.RolloutRequest(position_id=PORTES_START, trials=10, plies=7)
        with self.assertRaisesRegex(SliceError, "INVALID_ARGUMENT: plies"):
            split_rollout(REPLICAS, bad)


if __name__ == "__main__":
    unittest.main()
