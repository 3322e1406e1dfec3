#!/usr/bin/env python3
"""Plays a whole Tavli match against a running tavli-engine server, writes its
record (docs/records.md) and analyses it with AnalyzeGame.

The client does what docs/api.md's walkthrough ("A full game from a client") says,
one RPC per step:

  ResolveOpeningRoll   who starts a match (and the game after a draw), R2
  GetStartingPosition  the position of the game's variant, the starter to move
  (the client rolls)   two dice per turn
  ListLegalPlays       the plays of the roll (random policy), or
  Evaluate             the plays ranked best first (engine policy)
  ApplyPlay            the new position and, at the end, the outcome
  AdvanceMatch         the score, the next variant (Portes -> Plakoto -> Fevga),
                       who starts, whether the match is over
  AnalyzeGame          the record: every turn's error and luck, the summaries

The stubs are those of the Python client package, clients/python (`tavli.v1`,
generated from proto/tavli/v1/engine.proto when the package is installed):

  python3 -m venv .venv && .venv/bin/pip install ./clients/python
  .venv/bin/python examples/python/play_match.py --addr 127.0.0.1:50051 --length 3 \
      --seed 7 --policy engine --out match.mat --plies 1
"""

import argparse
import random
import sys

try:
    import grpc
    from tavli.v1 import engine_pb2 as pb
    from tavli.v1 import engine_pb2_grpc as rpc
except ImportError as e:
    sys.exit(f"{e}: install the client package first (pip install ./clients/python)")


VARIANT_NAMES = {1: "Portes", 2: "Plakoto", 3: "Fevga"}


def roll(rng):
    return rng.randint(1, 6), rng.randint(1, 6)


def play_game(stub, rng, variant, starter, policy, turns_out):
    """Plays one game from the start; returns its outcome. Appends (dice, notation)."""
    pos = stub.GetStartingPosition(
        pb.GetStartingPositionRequest(variant=variant, side_to_move=starter)
    ).position
    while True:
        d1, d2 = roll(rng)
        dice = pb.Dice(die1=d1, die2=d2)
        if policy == "engine":
            ranked = stub.Evaluate(
                pb.EvaluateRequest(position_id=pos.position_id, dice=dice, plies=0)
            ).ranked_plays
            notation = ranked[0].play.notation
        else:
            plays = stub.ListLegalPlays(
                pb.ListLegalPlaysRequest(
                    position_id=pos.position_id, dice=dice, detail=pb.PLAY_DETAIL_COMPACT
                )
            ).plays
            notation = rng.choice(plays).notation
        applied = stub.ApplyPlay(
            pb.ApplyPlayRequest(position_id=pos.position_id, dice=dice, notation=notation)
        )
        turns_out.append((d1, d2, applied.notation))
        pos = applied.position
        if applied.HasField("outcome"):
            return applied.outcome


def opening_roll(stub, rng):
    """R2: one die each until they differ; returns (starter, white die, black die)."""
    while True:
        w, b = roll(rng)
        r = stub.ResolveOpeningRoll(pb.ResolveOpeningRollRequest(white_die=w, black_die=b))
        if not r.roll_again:
            return r.starter, w, b


def result_text(outcome):
    if outcome.winner == 0:
        return "Draw"
    return f"Wins {outcome.points} point{'' if outcome.points == 1 else 's'}"


def write_record(length, names, games):
    """The match in the record format, laid out as the engine writes it (GNU
    Backgammon's MAT layout): `%3d) %-27s ` for a left cell, the right cell and a
    line end, the result at column 6 (left) or 34 (right)."""
    out = [f" {length} point match\n\n"]
    for n, g in enumerate(games, 1):
        head = f" Game {n} {VARIANT_NAMES[g['variant']]}"
        if g["opening"]:
            head += " opening {}-{}".format(*g["opening"])
        out.append(head + "\n")
        left = f"{names[0]} : {g['score'][0]}"
        out.append(f" {left:<31}{names[1]} : {g['score'][1]}\n")
        i = 1 if g["starter"] == 2 else 0
        if i:
            out.append("  1)" + " " * 29)
        for d1, d2, notation in g["turns"]:
            cell = f"{d1}{d2}: {notation}"
            if i % 2:
                out.append(cell + "\n")
            else:
                out.append(f"{i // 2 + 1:>3}) {cell.rstrip(' '):<27} ")
            i += 1
        last_right = (i - 1) % 2 == 1
        out.append((" " * 34 if last_right else "\n      ") + result_text(g["outcome"]) + "\n\n")
    return "".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--addr", default="127.0.0.1:50051", help="the server's gRPC address")
    ap.add_argument("--length", type=int, default=3, help="match length in points")
    ap.add_argument("--seed", type=int, default=7, help="seed of the dice")
    ap.add_argument("--policy", choices=["engine", "random"], default="engine")
    ap.add_argument("--names", default="eleni,nikos", help="White's and Black's names")
    ap.add_argument("--out", default="match.mat", help="where to write the record")
    ap.add_argument("--plies", type=int, default=0, help="analysis depth, 0..2")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the server")
    args = ap.parse_args()

    channel = grpc.insecure_channel(args.addr)
    grpc.channel_ready_future(channel).result(timeout=args.timeout)
    stub = rpc.TavliEngineStub(channel)
    rng = random.Random(args.seed)
    names = args.names.split(",")

    state = pb.MatchState(length=args.length, variant=pb.VARIANT_PORTES)
    games = []
    while True:
        opening = None
        starter = state.starter
        if starter == pb.SIDE_UNSPECIFIED:
            starter, w, b = opening_roll(stub, rng)
            opening = (w, b)
        turns = []
        outcome = play_game(stub, rng, state.variant, starter, args.policy, turns)
        games.append(
            dict(
                variant=state.variant,
                opening=opening,
                starter=starter,
                score=(state.score_white, state.score_black),
                turns=turns,
                outcome=outcome,
            )
        )
        state = stub.AdvanceMatch(pb.AdvanceMatchRequest(match_state=state, outcome=outcome)).match_state
        print(
            f"game {len(games)} ({VARIANT_NAMES[games[-1]['variant']]}): {len(turns)} turns, "
            f"{result_text(outcome).lower()} for {'nobody' if outcome.winner == 0 else names[outcome.winner - 1]}; "
            f"score {state.score_white}-{state.score_black}"
        )
        if state.match_over:
            break

    text = write_record(args.length, names, games)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {args.out}: {len(games)} games, {sum(len(g['turns']) for g in games)} turns")

    request = pb.AnalyzeGameRequest(text=text, plies=args.plies)
    turns = 0
    for msg in stub.AnalyzeGame(request, timeout=600):
        kind = msg.WhichOneof("item")
        if kind == "record":
            if msg.record.text != text:
                sys.exit("the server's text form of the match differs from the record written")
            expected = msg.record.turns
        elif kind == "turn":
            turns += 1
        elif kind == "game":
            g = msg.game
            w, b = g.players
            print(
                f"analysis game {g.game} ({VARIANT_NAMES[g.variant]}): {g.result}; "
                f"{w.player} {w.error_rate_milli:.1f} ({w.rating}), "
                f"{b.player} {b.error_rate_milli:.1f} ({b.rating}) millipoints/move"
            )
        elif kind == "summary":
            for p in msg.summary.players:
                print(
                    f"match {p.player}: {p.moves} moves ({p.unforced_moves} with a choice), "
                    f"marks {p.doubtful}/{p.bad}/{p.very_bad}, error {p.total_error:.3f} "
                    f"({p.error_rate_milli:.1f} millipoints/move, {p.rating}), "
                    f"luck {p.total_luck:+.3f} ({p.luck_rating})"
                )
    if turns != expected:
        sys.exit(f"analysed {turns} turns, the record has {expected}")
    print(f"analysed {turns} turns at {args.plies} plies")


if __name__ == "__main__":
    main()
