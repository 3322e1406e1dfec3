//! XGIDs that eXtreme Gammon wrote (tests/data/xgid/README.md): each reads as the
//! position GNU Backgammon's reader gives, writes back to the same text, and XG's own
//! best plays of it are legal plays here (R4: Portes plays as backgammon does).

use tavli_engine::rules::position_id::to_gnubg_id;
use tavli_engine::rules::xgid::{from_xgid, to_xgid, Xgid, XgidDice};
use tavli_engine::rules::{apply, legal_plays, PlayInput, Side, Variant};

struct Example {
    xgid: &'static str,
    gnubg: &'static str,
    plays: Vec<&'static str>,
}

fn examples() -> Vec<Example> {
    include_str!("data/xgid/xg-examples.tsv")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Example {
                xgid: f[0],
                gnubg: f[1],
                plays: f[2].split('|').filter(|p| !p.is_empty()).collect(),
            }
        })
        .collect()
}

#[test]
fn xg_examples_round_trip_and_read_as_gnubg_reads_them() {
    let all = examples();
    assert_eq!(all.len(), 35);
    let mut black_on_roll = 0;
    for e in &all {
        let x = Xgid::parse(e.xgid).unwrap_or_else(|err| panic!("{}: {err}", e.xgid));
        // Every field as XG wrote it.
        assert_eq!(x.to_string(), e.xgid);
        assert_eq!(x.position.variant, Variant::Portes);
        // The same board and side on roll as GNU Backgammon's reader.
        assert_eq!(to_gnubg_id(&x.position).unwrap(), e.gnubg, "{}", e.xgid);
        // Written as a cubeless money game, it reads back to the same position.
        let money = to_xgid(&x.position).unwrap();
        assert!(money.ends_with(":00:0:0:0:0:0"), "{money}");
        assert_eq!(from_xgid(&money).unwrap(), x.position);
        black_on_roll += (x.position.turn == Side::Black) as u32;
    }
    // Both turn values are among them.
    assert_eq!(black_on_roll, 4);
}

#[test]
fn xgs_best_plays_are_legal_here() {
    let mut checked = 0;
    for e in examples().iter().filter(|e| !e.plays.is_empty()) {
        let x = Xgid::parse(e.xgid).unwrap();
        let XgidDice::Rolled(dice) = x.dice else {
            panic!("{}: a checker play has dice", e.xgid)
        };
        for &play in &e.plays {
            // A step to off is one die in this project's notation (`4/off` with 5-2 is
            // not `4/2/off`, README "Move notation"); XG writes a checker borne off
            // with four 2s as `8/Off`: that one is written out here.
            let play = match play {
                "8/Off" => {
                    assert!(apply(&x.position, dice, &PlayInput::Notation(play.into())).is_err());
                    "8/6/4/2/off"
                }
                p => p,
            };
            let p = apply(&x.position, dice, &PlayInput::Notation(play.to_string()))
                .unwrap_or_else(|err| panic!("{} {dice}: {play}: {err}", e.xgid));
            // The play passes the turn; its resulting position writes and reads back.
            assert_eq!(p.position.turn, x.position.turn.opponent());
            assert_eq!(
                from_xgid(&to_xgid(&p.position).unwrap()).unwrap(),
                p.position
            );
            checked += 1;
        }
        // Every legal play's resulting position round-trips too.
        for p in legal_plays(&x.position, dice).unwrap() {
            assert_eq!(
                from_xgid(&to_xgid(&p.position).unwrap()).unwrap(),
                p.position
            );
        }
    }
    assert_eq!(checked, 18 * 3 + 2);
}
