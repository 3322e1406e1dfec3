#!/usr/bin/env python3
"""Request corpus of scripts/load.sh: gRPC request bodies (5-byte frame + protobuf).

Plays seeded random games of Portes, Plakoto and Fevga with the server's own CLI
(`tavli-engine plays --json`), samples positions spread over every phase of those
games, and writes one pre-encoded gRPC request body per file:

  OUT/llp-<variant>-NN.bin     ListLegalPlays  (half Position ID, half structured)
  OUT/apply-<variant>-NN.bin   ApplyPlay       (notation, or resulting Position ID)
  OUT/eval-<variant>-NN.bin    Evaluate        (plies 0, with the roll: ranked plays)
  OUT/choose-<variant>-NN.bin  ChoosePlay      (SKILL_LEVEL_BEST, seed 1: 0 ply on a
                                                server started with --max-plies 0)
  OUT/health.bin               grpc.health.v1.Health/Check (service "")
  OUT/manifest.tsv             kind, variant, file, position, dice, play

Python standard library only: the protobuf wire format of tavli.v1 is written by
hand below (field numbers from proto/tavli/v1/engine.proto). The server judges
every body: load.sh sends each once before measuring and requires `OK` from
grpc_server_handled_total.

Usage: corpus.py --bin target/release/tavli-engine --out DIR [--seed 2026]
                 [--games 3] [--llp 12] [--apply 4] [--eval 4] [--choose 4]
"""
import argparse
import json
import os
import random
import struct
import subprocess
import sys

VARIANTS = {"portes": 1, "plakoto": 2, "fevga": 3}
SIDES = {"SIDE_UNSPECIFIED": 0, "SIDE_WHITE": 1, "SIDE_BLACK": 2}
MAX_PLIES_PER_GAME = 600  # bounded: a random-play game that runs longer is cut


# --- protobuf wire format -------------------------------------------------------
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_varint(field, n):
    return varint(field << 3 | 0) + varint(n) if n else b""


def f_bytes(field, data):
    return varint(field << 3 | 2) + varint(len(data)) + data


def f_str(field, s):
    return f_bytes(field, s.encode())


def grpc_frame(msg):
    return b"\x00" + struct.pack(">I", len(msg)) + msg


def enc_dice(d1, d2):  # tavli.v1.Dice
    return f_varint(1, d1) + f_varint(2, d2)


def enc_position(p):  # tavli.v1.Position from the CLI's proto3 JSON
    out = f_varint(1, VARIANTS[p["variant"].removeprefix("VARIANT_").lower()])
    out += f_varint(2, SIDES[p["sideToMove"]])
    points = p["points"]
    assert len(points) == 24, p
    for pt in points:  # repeated: every one of the 24, empty ones too
        out += f_bytes(3, f_varint(1, pt.get("white", 0)) + f_varint(2, pt.get("black", 0))
                       + f_varint(3, SIDES[pt.get("pinned", "SIDE_UNSPECIFIED")]))
    for field, name in ((4, "barWhite"), (5, "barBlack"), (6, "offWhite"), (7, "offBlack")):
        out += f_varint(field, int(p.get(name, 0)))
    return out


def enc_pos_oneof(rec, structured):
    # ListLegalPlaysRequest / ApplyPlayRequest / EvaluateRequest share the numbers:
    # 1 structured, 2 position_id.
    if structured:
        return f_bytes(1, enc_position(rec["json"]))
    return f_str(2, rec["id"])


# --- games ----------------------------------------------------------------------
def cli(binary, *args):
    r = subprocess.run([binary, *args], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        sys.exit(f"corpus: {binary} {' '.join(args)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def play_game(binary, variant, rng):
    """One random-play game; returns its turns (position, dice, plays, chosen)."""
    pos = cli(binary, "start", "--variant", variant, "--json")["position"]
    turns = []
    for _ in range(MAX_PLIES_PER_GAME):
        d1, d2 = rng.randint(1, 6), rng.randint(1, 6)
        resp = cli(binary, "plays", "--position", pos["positionId"], "--dice", f"{d1}-{d2}", "--json")
        plays = resp["plays"]
        chosen = rng.choice(plays)
        turns.append({"id": pos["positionId"], "json": pos, "dice": (d1, d2),
                      "nplays": len(plays), "play": chosen})
        if chosen.get("outcome"):
            break
        pos = chosen["position"]
    return turns


def spread(items, k, rng):
    """k items spread evenly over the list (every phase of the games), jittered."""
    if len(items) <= k:
        return list(items)
    step = len(items) / k
    return [items[min(len(items) - 1, int(i * step + rng.random() * step))] for i in range(k)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--games", type=int, default=3, help="games per variant")
    ap.add_argument("--llp", type=int, default=12, help="ListLegalPlays bodies per variant")
    ap.add_argument("--apply", type=int, default=4, help="ApplyPlay bodies per variant")
    ap.add_argument("--eval", type=int, default=4, help="Evaluate bodies per variant")
    ap.add_argument("--choose", type=int, default=4, help="ChoosePlay bodies per variant")
    ap.add_argument("--detail", choices=["full", "compact"], default="full",
                    help="ListLegalPlays detail: the default (full) or PLAY_DETAIL_COMPACT")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    manifest = []

    def write(name, msg, *cols):
        with open(os.path.join(a.out, name), "wb") as f:
            f.write(grpc_frame(msg))
        manifest.append("\t".join([name, *map(str, cols)]))

    for variant in VARIANTS:
        turns = []
        for _ in range(a.games):
            turns += play_game(a.bin, variant, rng)
        # Skip forced passes for ListLegalPlays/Evaluate: a real caller asks when it
        # has something to choose (they are still legal requests).
        choice = [t for t in turns if t["nplays"] > 1] or turns
        for i, t in enumerate(spread(choice, a.llp, rng)):
            structured = i % 2 == 1
            msg = enc_pos_oneof(t, structured) + f_bytes(4, enc_dice(*t["dice"]))
            if a.detail == "compact":
                msg += f_varint(5, 2)  # detail = PLAY_DETAIL_COMPACT
            write(f"llp-{variant}-{i:02d}.bin", msg, "ListLegalPlays", variant,
                  "structured" if structured else "position_id", t["id"], "%d-%d" % t["dice"], t["nplays"])
        for i, t in enumerate(spread(turns, a.apply, rng)):
            play = t["play"]
            msg = enc_pos_oneof(t, False) + f_bytes(4, enc_dice(*t["dice"]))
            if i % 2 == 0:
                msg += f_str(6, play["notation"])  # notation
                how = play["notation"]
            else:
                msg += f_str(8, play["position"]["positionId"])  # resulting_position_id
                how = play["position"]["positionId"]
            write(f"apply-{variant}-{i:02d}.bin", msg, "ApplyPlay", variant, "position_id", t["id"], "%d-%d" % t["dice"], how)
        for i, t in enumerate(spread(choice, a.eval, rng)):
            msg = enc_pos_oneof(t, False) + f_bytes(4, enc_dice(*t["dice"])) + f_varint(5, 0)
            write(f"eval-{variant}-{i:02d}.bin", msg, "Evaluate", variant, "position_id", t["id"], "%d-%d" % t["dice"], "plies=0")
        for i, t in enumerate(spread(choice, a.choose, rng)):
            # ChoosePlayRequest: position_id 2, dice 5, level 6 (7: SKILL_LEVEL_BEST),
            # seed 8 (proto3 optional: written even when 0).
            msg = f_str(2, t["id"]) + f_bytes(5, enc_dice(*t["dice"])) + f_varint(6, 7)
            msg += varint(8 << 3 | 0) + varint(1)
            write(f"choose-{variant}-{i:02d}.bin", msg, "ChoosePlay", variant, "position_id", t["id"], "%d-%d" % t["dice"], "level=best")
        n = [t["nplays"] for t in turns]
        print(f"corpus: {variant}: {a.games} games, {len(turns)} turns, "
              f"{sum(n) / len(n):.1f} legal plays per turn on average", file=sys.stderr)
    write("health.bin", b"", "Check", "-", "-", "service=\"\"", "-", "-")
    with open(os.path.join(a.out, "manifest.tsv"), "w") as f:
        f.write("file\trpc\tvariant\tencoding\tposition\tdice\textra\n")
        f.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
