#!/usr/bin/env python3
"""GNU Backgammon against itself at two depths, Portes rules and Tavli scoring: the
reference for what a deeper search is worth to the judge's own opponent.

Player A is gnubg-nn searching --plies-a deep, player B gnubg-nn at --plies-b (0: the
judge's opponent). Each player takes, among gnubg's legal moves, the one of best cubeless
Tavli equity (a gammon or backgammon counts 2, as the Portes judge of docs/strength.md
plays gnubg); at 1 ply and more the moves are first valued at 0 ply and only the best 8 within
0.16 of the best are searched deeper (the engine's and GNU Backgammon's move filter);
inside a 1-ply value the opponent's replies are gnubg's own choice (gnubg_nn.probabilities).
Duplicate dice as the judge: pair k uses random.Random(seed * 1_000_003 + k), one
(d1, d2) per turn; game A has player A White, game B Black. Portes and backgammon have
the same moves (the judge has found no difference in millions of turns), so gnubg's move
generator alone plays the games.

Output: one JSON line per game (pair, game, a_points, ...), the format of the judge's
run files; summary on stdout: points per game for A with a 95% interval over pair means.

  python3 -m venv /tmp/gnubg && /tmp/gnubg/bin/pip install gnubg-nn==1.1.0a11
  /tmp/gnubg/bin/python scripts/gnubg-self.py --plies-a 1 --pairs 5000 --seed 12 --out a.jsonl

(1 ply against 0 ply: about a quarter of a second a pair on one core, 20 minutes for 5,000
pairs; split a run with --first-pair and concatenate the files.)
"""
import argparse
import json
import math
import random

import gnubg_nn as g


def start():
    side = [0] * 25  # own point i+1 at index i, bar at 24 (gnubg's half-board)
    side[23], side[12], side[7], side[5] = 2, 5, 3, 5
    return side


def equity_after(mover, opp, plies):
    """The mover's cubeless Tavli equity after its move (opponent on roll)."""
    if sum(mover) == 0:
        return 2.0 if sum(opp) == 15 else 1.0
    w, wg, _wbg, lg, _lbg = g.probabilities([list(mover), list(opp)], plies)
    return -((2 * w - 1) + wg - lg)


def choose(mover, opp, d1, d2, plies):
    """The (mover, opp) after the chosen move; unchanged when no move is legal."""
    after = []
    for k in g.moves([list(opp), list(mover)], d1, d2):
        o, m = g.board_from_position_key(k)  # not swapped: (opponent, mover)
        after.append((tuple(m), tuple(o)))
    if not after:
        return mover, opp
    if len(after) == 1:
        return after[0]
    scored = sorted(((equity_after(m, o, 0), i) for i, (m, o) in enumerate(after)), key=lambda x: (-x[0], x[1]))
    if plies == 0:
        return after[scored[0][1]]
    keep = [i for e, i in scored[:8] if e >= scored[0][0] - 0.16]
    return after[max(keep, key=lambda i: (equity_after(*after[i], plies), -i))]


def game(plies_a, plies_b, a_white, rng_seed):
    rng = random.Random(rng_seed)
    rolls = []
    mover, opp = tuple(start()), tuple(start())  # White on roll first
    white = True
    turn = 0
    while True:
        while len(rolls) <= turn:
            rolls.append((rng.randint(1, 6), rng.randint(1, 6)))
        d1, d2 = rolls[turn]
        a_turn = white == a_white
        mover, opp = choose(mover, opp, d1, d2, plies_a if a_turn else plies_b)
        if sum(mover) == 0:
            pts = 2 if sum(opp) == 15 else 1
            return (pts if a_turn else -pts), turn + 1
        mover, opp = opp, mover
        white = not white
        turn += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plies-a", type=int, default=1, help="player A's search depth (default 1)")
    ap.add_argument("--plies-b", type=int, default=0, help="player B's search depth (default 0: the judge's opponent)")
    ap.add_argument("--pairs", type=int, default=100, help="duplicate pairs, two games each (default 100)")
    ap.add_argument("--first-pair", type=int, default=0, help="number of the first pair (to split a run)")
    ap.add_argument("--seed", type=int, default=1, help="dice seed, as the judge's --seed")
    ap.add_argument("--out", required=True, help="JSONL file, one line per game (overwritten)")
    a = ap.parse_args()
    if a.pairs < 1 or min(a.plies_a, a.plies_b) < 0:
        ap.error("--pairs must be at least 1 and the plies at least 0")
    means = []
    with open(a.out, "w") as out:
        for k in range(a.first_pair, a.first_pair + a.pairs):
            pts = []
            for name, a_white in (("A", True), ("B", False)):
                p, turns = game(a.plies_a, a.plies_b, a_white, a.seed * 1_000_003 + k)
                pts.append(p)
                out.write(json.dumps({"pair": k, "game": name, "a": f"gnubg@{a.plies_a}", "b": f"gnubg@{a.plies_b}",
                                      "seed": a.seed, "a_white": a_white, "a_points": p, "mars": abs(p) == 2,
                                      "turns": turns}) + "\n")
            out.flush()
            means.append(sum(pts) / 2)
    m = sum(means) / len(means)
    sd = math.sqrt(sum((x - m) ** 2 for x in means) / max(1, len(means) - 1))
    print(json.dumps({"games": 2 * len(means), "ppg_A": round(m, 4),
                      "ci95_pairs": round(1.96 * sd / math.sqrt(len(means)), 4)}))


if __name__ == "__main__":
    main()
