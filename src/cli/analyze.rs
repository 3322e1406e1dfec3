//! `tavli-engine analyze RECORD [--plies N] [--luck-plies N] [--json] [--svg FILE]`:
//! the `AnalyzeGame` RPC from the command line. A progress bar on stderr when it is a
//! terminal; a table per game and the summary on stdout (or, with `--json`, every
//! stream message as proto3 JSON, one object after another as grpcurl prints a
//! stream); with `--svg FILE` one picture per game, `FILE-1.svg`, `FILE-2.svg`, ...
//! (`FILE` without its `.svg`): both players' winning chances after every turn with
//! the marked plays circled.

use clap::Args;
use std::fmt::Write as _;
use std::io::IsTerminal;
use tavli_engine::service::analyze::run_analysis;
use tavli_engine::service::pb::analyze_game_response::Item;
use tavli_engine::service::{json, pb, TavliEngineService};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Options of `tavli-engine analyze`.
#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// The record file (docs/records.md: MAT text, a Tavli variant after each game
    /// number), or `-` for standard input.
    pub record: String,
    /// Depth of the play evaluations, 0..=2.
    #[arg(long, default_value_t = 0)]
    pub plies: u32,
    /// Depth of the luck evaluations, 0..=2 (each ply costs 21 rankings per turn).
    #[arg(long, default_value_t = 0)]
    pub luck_plies: u32,
    /// Error thresholds of the marks doubtful, bad, very bad (points).
    #[arg(long, value_delimiter = ',', num_args = 3, default_values_t = [0.04f32, 0.08, 0.16])]
    pub thresholds: Vec<f32>,
    /// Print every stream message as proto3 JSON (the shape grpcurl prints).
    #[arg(long)]
    pub json: bool,
    /// Draw each game's winning chances and marked plays: FILE-1.svg, FILE-2.svg, ...
    #[arg(long, value_name = "FILE")]
    pub svg: Option<String>,
}

/// Runs the command and returns what it prints on stdout.
pub fn run(a: AnalyzeArgs, service: TavliEngineService) -> Result<String, BoxError> {
    let text = if a.record == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(&a.record).map_err(|e| format!("{}: {e}", a.record))?
    };
    let req = pb::AnalyzeGameRequest {
        record: Some(pb::analyze_game_request::Record::Text(text)),
        plies: a.plies,
        luck_plies: a.luck_plies,
        thresholds: Some(pb::MarkThresholds {
            doubtful: a.thresholds[0],
            bad: a.thresholds[1],
            very_bad: a.thresholds[2],
        }),
    };
    let prepared = service.prepare_analysis(&req)?;
    let turns = prepared.record.turn_count() as u64;
    let bar = if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(turns);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} analysing {pos}/{len} turns [{bar:30}] {elapsed} / ~{duration}",
            )
            .expect("template")
            .progress_chars("=> "),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut messages = Vec::new();
    let r = run_analysis(prepared, None, None, &mut |m| {
        if matches!(m.item, Some(Item::Turn(_))) {
            bar.inc(1);
        }
        messages.push(m);
        true
    });
    bar.finish_and_clear();
    r?;
    if let Some(path) = &a.svg {
        for (name, svg) in svgs(path, &messages) {
            std::fs::write(&name, svg).map_err(|e| format!("{name}: {e}"))?;
            eprintln!("wrote {name}");
        }
    }
    if a.json {
        let mut out = String::new();
        for m in &messages {
            out.push_str(
                &serde_json::to_string_pretty(&json::to_json(m, "tavli.v1.AnalyzeGameResponse"))
                    .expect("JSON"),
            );
            out.push('\n');
        }
        return Ok(out);
    }
    Ok(text_report(&messages, a.plies, a.luck_plies))
}

fn side_letter(side: i32) -> &'static str {
    if side == pb::Side::White as i32 {
        "L"
    } else {
        "R"
    }
}

fn mark_symbol(mark: i32) -> &'static str {
    match pb::PlayMark::try_from(mark) {
        Ok(pb::PlayMark::Doubtful) => "?!",
        Ok(pb::PlayMark::Bad) => "?",
        Ok(pb::PlayMark::VeryBad) => "??",
        _ => "",
    }
}

fn variant_name(v: i32) -> &'static str {
    match pb::Variant::try_from(v) {
        Ok(pb::Variant::Portes) => "Portes",
        Ok(pb::Variant::Plakoto) => "Plakoto",
        Ok(pb::Variant::Fevga) => "Fevga",
        _ => "?",
    }
}

fn dice_text(d: &Option<pb::Dice>) -> String {
    d.as_ref()
        .map_or(String::new(), |d| format!("{}-{}", d.die1, d.die2))
}

/// The per-player lines of a summary.
fn player_lines(out: &mut String, players: &[pb::PlayerSummary], indent: &str) {
    if players.len() != 2 {
        return;
    }
    let (w, b) = (&players[0], &players[1]);
    let rows: [(&str, String, String); 8] = [
        (
            "",
            format!("{} (white)", w.player),
            format!("{} (black)", b.player),
        ),
        (
            "moves (with a choice)",
            format!("{} ({})", w.moves, w.unforced_moves),
            format!("{} ({})", b.moves, b.unforced_moves),
        ),
        (
            "doubtful / bad / very bad",
            format!("{} / {} / {}", w.doubtful, w.bad, w.very_bad),
            format!("{} / {} / {}", b.doubtful, b.bad, b.very_bad),
        ),
        (
            "total error (points)",
            format!("{:.3}", w.total_error),
            format!("{:.3}", b.total_error),
        ),
        (
            "error rate (millipoints/move)",
            format!("{:.1}", w.error_rate_milli),
            format!("{:.1}", b.error_rate_milli),
        ),
        ("rating", w.rating.clone(), b.rating.clone()),
        (
            "total luck (points)",
            format!("{:+.3}", w.total_luck),
            format!("{:+.3}", b.total_luck),
        ),
        ("luck rating", w.luck_rating.clone(), b.luck_rating.clone()),
    ];
    for (label, a, b) in rows {
        let _ = writeln!(out, "{indent}{label:<31}{a:<24}{b}");
    }
}

fn text_report(messages: &[pb::AnalyzeGameResponse], plies: u32, luck_plies: u32) -> String {
    let mut out = String::new();
    let mut header_due = true;
    for m in messages {
        match &m.item {
            Some(Item::Record(r)) => {
                let _ = writeln!(
                    out,
                    "{} game{}, {} turns, match to {} (plays at {plies} plies, luck at {luck_plies})",
                    r.games,
                    if r.games == 1 { "" } else { "s" },
                    r.turns,
                    r.match_length
                );
            }
            Some(Item::Turn(t)) => {
                if header_due {
                    let _ = writeln!(
                        out,
                        "\nGame {}\n{:>4} {:>4} {:<10} {:<5} {:<24} {:>6} {:<3} {:<24} {:>7}",
                        t.game,
                        "turn",
                        "move",
                        "player",
                        "dice",
                        "play",
                        "error",
                        "",
                        "best",
                        "luck"
                    );
                    header_due = false;
                }
                let best = if t.best_play == t.play {
                    ""
                } else {
                    &t.best_play
                };
                let _ = writeln!(
                    out,
                    "{:>4} {:>3}{} {:<10} {:<5} {:<24} {:>6.3} {:<3} {:<24} {:>+7.3}",
                    t.turn,
                    t.move_number,
                    side_letter(t.side),
                    t.player,
                    dice_text(&t.dice),
                    t.play,
                    t.error,
                    mark_symbol(t.mark),
                    best,
                    t.luck
                );
            }
            Some(Item::Game(g)) => {
                if header_due {
                    let _ = writeln!(out, "\nGame {}", g.game);
                }
                let _ = writeln!(
                    out,
                    "game {} ({}): {}",
                    g.game,
                    variant_name(g.variant),
                    g.result
                );
                for n in &g.notes {
                    let _ = writeln!(out, "  note: {n}");
                }
                player_lines(&mut out, &g.players, "  ");
                header_due = true;
            }
            Some(Item::Summary(s)) => {
                let _ = writeln!(
                    out,
                    "\nSummary of {} game{}",
                    s.games,
                    if s.games == 1 { "" } else { "s" }
                );
                player_lines(&mut out, &s.players, "");
            }
            None => {}
        }
    }
    out
}

/// The SVG file names and contents: one per game.
fn svgs(path: &str, messages: &[pb::AnalyzeGameResponse]) -> Vec<(String, String)> {
    let stem = path.strip_suffix(".svg").unwrap_or(path);
    let mut out = Vec::new();
    let mut turns: Vec<&pb::TurnAnalysis> = Vec::new();
    for m in messages {
        match &m.item {
            Some(Item::Turn(t)) => turns.push(t),
            Some(Item::Game(g)) => {
                out.push((format!("{stem}-{}.svg", g.game), svg(g, &turns)));
                turns.clear();
            }
            _ => {}
        }
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One game's picture: the winning chances of both players after each turn (White's
/// line dark, Black's dashed), marked plays circled on the mover's line (yellow
/// doubtful, orange bad, red very bad), each with a tooltip.
fn svg(g: &pb::GameSummary, turns: &[&pb::TurnAnalysis]) -> String {
    const W: f32 = 760.0;
    const H: f32 = 340.0;
    const L: f32 = 56.0;
    const R: f32 = 20.0;
    const T: f32 = 66.0;
    const B: f32 = 44.0;
    let n = turns.len().max(1) as f32;
    let x = |i: usize| L + (W - L - R) * (i as f32 + 1.0) / (n + 1.0);
    let y = |p: f32| T + (H - T - B) * (1.0 - p.clamp(0.0, 1.0));
    let names = |i: usize| g.players.get(i).map_or("", |p| p.player.as_str());
    let chances = |t: &pb::TurnAnalysis| {
        let p = t.probabilities.unwrap_or_default();
        if t.side == pb::Side::White as i32 {
            (p.win, p.lose)
        } else {
            (p.lose, p.win)
        }
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(s, "<rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>");
    let _ = writeln!(
        s,
        "<text x=\"{L}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">Game {} — {} — {} (white) vs {} (black) — {}</text>",
        g.game,
        variant_name(g.variant),
        esc(names(0)),
        esc(names(1)),
        esc(&g.result)
    );
    let _ = writeln!(
        s,
        "<text x=\"{L}\" y=\"36\" fill=\"#555\">winning chances after each turn; circles: plays marked doubtful (yellow), bad (orange), very bad (red)</text>"
    );
    for (p, label) in [
        (0.0, "0%"),
        (0.25, "25%"),
        (0.5, "50%"),
        (0.75, "75%"),
        (1.0, "100%"),
    ] {
        let yy = y(p);
        let _ = writeln!(
            s,
            "<line x1=\"{L}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#555\">{label}</text>",
            W - R,
            L - 6.0,
            yy + 4.0
        );
    }
    let step = (turns.len() / 10).max(1).div_ceil(5) * 5;
    for i in (0..turns.len()).filter(|i| (i + 1) % step.max(1) == 0 || *i == 0) {
        let xx = x(i);
        let _ = writeln!(
            s,
            "<text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
            H - B + 16.0,
            i + 1
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">turn</text>",
        (L + W - R) / 2.0,
        H - 8.0
    );
    for (who, style) in [
        (0usize, "stroke=\"#222\" stroke-width=\"2\""),
        (
            1,
            "stroke=\"#1f5fbf\" stroke-width=\"2\" stroke-dasharray=\"6 4\"",
        ),
    ] {
        let pts: Vec<String> = turns
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let (w, b) = chances(t);
                format!("{:.1},{:.1}", x(i), y(if who == 0 { w } else { b }))
            })
            .collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" {style} points=\"{}\"/>",
            pts.join(" ")
        );
        let (lx, ly) = (L + 220.0 * who as f32, T - 14.0);
        let _ = writeln!(
            s,
            "<line x1=\"{lx}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" {style}/><text x=\"{}\" y=\"{}\">{} ({})</text>",
            lx + 24.0,
            lx + 30.0,
            ly + 4.0,
            esc(names(who)),
            if who == 0 { "white" } else { "black" }
        );
    }
    for (i, t) in turns.iter().enumerate() {
        let (color, r) = match pb::PlayMark::try_from(t.mark) {
            Ok(pb::PlayMark::Doubtful) => ("#e8c000", 5.0),
            Ok(pb::PlayMark::Bad) => ("#f07000", 6.5),
            Ok(pb::PlayMark::VeryBad) => ("#d00000", 8.0),
            _ => continue,
        };
        let (w, b) = chances(t);
        let p = if t.side == pb::Side::White as i32 {
            w
        } else {
            b
        };
        let _ = writeln!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{r}\" fill=\"{color}\" fill-opacity=\"0.85\" stroke=\"#000\"><title>turn {} ({} {}): {} {} — best {}, error {:.3}</title></circle>",
            x(i),
            y(p),
            t.turn,
            esc(&t.player),
            dice_text(&t.dice),
            esc(&t.play),
            mark_symbol(t.mark),
            esc(&t.best_play),
            t.error
        );
    }
    s.push_str("</svg>\n");
    s
}
