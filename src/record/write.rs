//! Writing a record in GNU Backgammon's MAT layout (its `ExportGameJF`, read from its
//! source): `%3d) %-27s ` for a left cell, the right cell and a line end after it,
//! results and cube actions where GNU Backgammon puts them. The plays are written as
//! they were read (or in the engine's notation for structured input).

use super::model::{ActionKind, EndReason, GameRecord, MatchRecord};
use super::text::TIME_OUT_MARK;
use crate::rules::Side;
use std::fmt::Write as _;

fn points_text(p: u32) -> String {
    format!("Wins {p} point{}", if p == 1 { "" } else { "s" })
}

pub(crate) fn write(r: &MatchRecord) -> String {
    let mut out = String::new();
    for l in &r.preamble {
        out.push_str(l);
        out.push('\n');
    }
    let _ = write!(out, " {} point match\n\n", r.length);
    for g in &r.games {
        write_game(&mut out, g);
    }
    out
}

fn write_game(out: &mut String, g: &GameRecord) {
    let _ = write!(out, " Game {}", g.number);
    if g.tagged {
        let name = g.variant.name();
        let _ = write!(out, " {}{}", name[..1].to_ascii_uppercase(), &name[1..]);
        if let Some([a, b]) = g.opening {
            let _ = write!(out, " opening {a}-{b}");
        }
    }
    out.push('\n');
    let left = format!("{} : {}", g.players[0], g.score[0]);
    let _ = writeln!(out, " {left:<31}{} : {}", g.players[1], g.score[1]);

    // `i` counts cells as GNU Backgammon does: even = left column, odd = right.
    let mut i = 0usize;
    if g.actions.first().is_some_and(|a| a.side == Side::Black) {
        out.push_str("  1)                             ");
        i = 1;
    }
    let mut dice_rolled = false;
    let n = g.actions.len();
    let drop_points = g.end.as_ref().map_or(0, |e| e.points);
    for (k, a) in g.actions.iter().enumerate() {
        let odd = i % 2 == 1;
        let mut roll_only = false;
        let sz = match &a.kind {
            ActionKind::Play(t) => {
                dice_rolled = false;
                format!("{}{}: {}", t.dice.die1(), t.dice.die2(), t.written)
            }
            ActionKind::Roll(d) => {
                dice_rolled = true;
                roll_only = true;
                format!("{}{}: ", d.die1(), d.die2())
            }
            ActionKind::Double(c) => format!(" Doubles => {c}"),
            ActionKind::Take => " Takes".to_string(),
            ActionKind::Drop => format!(
                " Drops{}{}",
                if odd {
                    "\n      "
                } else {
                    "                       "
                },
                points_text(drop_points)
            ),
        };
        let number = i / 2 + 1;
        if odd {
            out.push_str(&sz);
            if !roll_only {
                out.push('\n');
            }
        } else if !roll_only {
            // A left cell: its own trailing blanks are covered by the padding.
            let cell = sz.trim_end_matches(' ');
            let _ = write!(out, "{number:>3}) {cell:<27} ");
        } else {
            let _ = write!(out, "{number:>3}) {sz:<3}");
        }
        if matches!(a.kind, ActionKind::Drop) {
            out.push('\n');
            if !odd {
                out.push('\n');
            }
        }
        if k + 1 == n {
            if let Some(e) = &g.end {
                if let EndReason::Board(_) = e.how {
                    let result = match e.winner {
                        Some(_) => points_text(e.points),
                        None => "Draw".to_string(),
                    };
                    let _ = write!(
                        out,
                        "{}{result}\n\n",
                        if odd {
                            "                                  "
                        } else {
                            "\n      "
                        }
                    );
                }
            }
        }
        i += 1;
    }
    if let Some(e) = &g.end {
        if matches!(e.how, EndReason::Resign | EndReason::TimeOut) {
            let odd = i % 2 == 1;
            let winner = e.winner.unwrap_or(Side::White);
            let mut text = points_text(e.points);
            if e.how == EndReason::TimeOut {
                // The extension that marks a time-out (docs/records.md).
                text.push(' ');
                text.push_str(TIME_OUT_MARK);
            }
            let flip = odd ^ dice_rolled;
            let sz = if winner == Side::White {
                // The right player resigned.
                format!("{}      {text}\n", if flip { "\n" } else { "" })
            } else {
                // The left player resigned: in the right column, or after the roll.
                let pad = match (flip, odd) {
                    (true, _) => 1,
                    (false, true) => 24,
                    (false, false) => 34,
                };
                format!("{}{text}\n", " ".repeat(pad))
            };
            out.push_str(&sz);
            out.push('\n');
        }
    }
}
