//! Game analysis: a checked record ([`crate::record::MatchRecord`]) in, every turn's
//! error and every roll's luck out, then a summary per player — GNU Backgammon's
//! analysis, cubeless, for Portes, Plakoto and Fevga.
//!
//! Per turn (a roll and the play made), over the evaluation contract
//! ([`PositionEvaluator`]):
//! - **Error**: the plays of the roll are ranked at [`AnalysisOptions::plies`]
//!   ([`PositionEvaluator::rank_plays`]: every play at 0 ply, the move filter's
//!   candidates searched deeper); the play made is valued at the same depth (searched
//!   on its own when the filter left it out). Error = best equity − equity of the play
//!   made, in points, never negative (a play made that searches better than the
//!   filter's best becomes the best). A forced play (one legal play, a pass included)
//!   has error 0 and is not counted as a move with a choice.
//! - **Mark**: doubtful / bad / very bad when the error is above the
//!   [`Thresholds`] (GNU Backgammon's defaults 0.04, 0.08, 0.16).
//! - **Luck** (GNU Backgammon's `LuckNormal`): for each of the 21 rolls the mover's
//!   equity after its best play at [`AnalysisOptions::luck_plies`]; "before the roll"
//!   is their mean (1-1 weighted 1/36, 2-1 2/36, which is the position's evaluation
//!   one ply deeper); the luck of the roll made is its equity minus that mean, so the
//!   luck of all 21 rolls averages to 0 exactly.
//!
//! Per player ([`PlayerStats`]): moves, moves with a choice, marks, total error and
//! error rate per move with a choice (thousandths of a point, GNU Backgammon's "mEMG"
//! for cubeless Tavli points), total luck and GNU Backgammon's rating names for both.
//!
//! Cube actions in backgammon records are read but not analysed (Tavli is cubeless);
//! each game's notes say so. Work stops at the deadline or on cancellation
//! ([`AnalysisOptions::cancel`]), checked before every evaluation.
//!
//! **Rollouts of the flagged plays** (when [`AnalysisOptions::rollout`] is set, as
//! GNU Backgammon's "rollout of the marked moves"): a turn marked doubtful or worse
//! at `plies` is valued again by Monte Carlo rollouts ([`crate::eval::rollout`]) of
//! the position after the play made and after each of the best
//! [`RolloutCheck::candidates`] plays of the ranking, each rollout with the same
//! seed (the same dice for every candidate, so that their difference is measured
//! with less noise). The best play, the error and the mark are then the rollouts'
//! (the search's verdict is kept in [`RolloutVerdict`]), and
//! [`TurnAnalysis::evaluation`] says `rollout`. The luck stays at `luck_plies`.

use crate::eval::rollout::{RolloutConfig, DEFAULT_TRIALS};
use crate::eval::{
    CancelToken, EndValues, EvalError, EvalOptions, PositionEvaluator, Probabilities, RankedPlay,
    StopWhen,
};
use crate::matchequity::MatchScore;
use crate::record::{ActionKind, EndReason, GameRecord, MatchRecord};
use crate::rules::{Dice, Play, Position, Side, Variant};
use std::time::Instant;

/// Error thresholds of the marks, in points (GNU Backgammon's defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// Above this: doubtful (default 0.04).
    pub doubtful: f32,
    /// Above this: bad (default 0.08).
    pub bad: f32,
    /// Above this: very bad (default 0.16).
    pub very_bad: f32,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            doubtful: 0.04,
            bad: 0.08,
            very_bad: 0.16,
        }
    }
}

impl Thresholds {
    /// The mark of an error (points): strictly above a threshold.
    pub fn mark(&self, error: f32) -> Mark {
        if error > self.very_bad {
            Mark::VeryBad
        } else if error > self.bad {
            Mark::Bad
        } else if error > self.doubtful {
            Mark::Doubtful
        } else {
            Mark::None
        }
    }
}

/// The mark of a play.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mark {
    None,
    Doubtful,
    Bad,
    VeryBad,
}

impl Mark {
    /// Text as GNU Backgammon writes it: ``, `?!`, `?`, `??`.
    pub fn symbol(self) -> &'static str {
        match self {
            Mark::None => "",
            Mark::Doubtful => "?!",
            Mark::Bad => "?",
            Mark::VeryBad => "??",
        }
    }

    /// Lower-case name: `none`, `doubtful`, `bad`, `very bad`.
    pub fn name(self) -> &'static str {
        match self {
            Mark::None => "none",
            Mark::Doubtful => "doubtful",
            Mark::Bad => "bad",
            Mark::VeryBad => "very bad",
        }
    }
}

/// The luck mark of a roll (GNU Backgammon: beyond ±0.3 lucky, ±0.6 very lucky).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LuckMark {
    VeryUnlucky,
    Unlucky,
    None,
    Lucky,
    VeryLucky,
}

impl LuckMark {
    /// The mark of a roll's luck in points.
    pub fn of(luck: f32) -> LuckMark {
        if luck > 0.6 {
            LuckMark::VeryLucky
        } else if luck > 0.3 {
            LuckMark::Lucky
        } else if luck < -0.6 {
            LuckMark::VeryUnlucky
        } else if luck < -0.3 {
            LuckMark::Unlucky
        } else {
            LuckMark::None
        }
    }
}

/// Rollouts of the flagged plays ([`AnalysisOptions::rollout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RolloutCheck {
    /// Depth of the search that chooses the plays in the trials, 0 or 1
    /// ([`crate::eval::rollout::MAX_ROLLOUT_PLIES`]).
    pub plies: u8,
    /// Trials per rolled-out play, at least 1.
    pub trials: u32,
    /// Seed of the dice, the same for every candidate of a turn and every turn.
    pub seed: u64,
    /// The best this many plays of the ranking are rolled out, and the play made
    /// (at least 1).
    pub candidates: usize,
}

impl Default for RolloutCheck {
    /// 0 ply, [`DEFAULT_TRIALS`] (1,296) trials, seed 0, 3 candidates.
    fn default() -> Self {
        RolloutCheck {
            plies: 0,
            trials: DEFAULT_TRIALS,
            seed: 0,
            candidates: 3,
        }
    }
}

/// What the rollouts of a flagged turn found, next to the search's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct RolloutVerdict {
    /// Trials per rolled-out play.
    pub trials: u32,
    /// Depth of the search that chose the plays in the trials.
    pub plies: u8,
    /// Plays rolled out (the play made included).
    pub candidates: usize,
    /// Standard error of [`TurnAnalysis::best_equity`], points.
    pub best_standard_error: f32,
    /// Standard error of [`TurnAnalysis::played_equity`], points.
    pub played_standard_error: f32,
    /// The error found by the search at [`AnalysisOptions::plies`], points.
    pub search_error: f32,
    /// Its mark.
    pub search_mark: Mark,
    /// The best play found by the search.
    pub search_best: Play,
}

/// What to analyse and how deep.
#[derive(Clone, Debug, Default)]
pub struct AnalysisOptions {
    /// Depth of the play evaluations (0..=2, [`crate::eval::MAX_PLIES`]).
    pub plies: u8,
    /// Depth of the luck evaluations (default 0, as GNU Backgammon's luck analysis;
    /// each ply costs 21 rankings at that depth per turn).
    pub luck_plies: u8,
    /// The marks' thresholds.
    pub thresholds: Thresholds,
    /// Stop with [`EvalError::DeadlineExceeded`] after this instant.
    pub deadline: Option<Instant>,
    /// Stop with [`EvalError::Cancelled`] once cancelled.
    pub cancel: Option<CancelToken>,
    /// Roll out the plays of every turn marked doubtful or worse; `None`: no rollouts.
    pub rollout: Option<RolloutCheck>,
}

impl AnalysisOptions {
    /// The evaluation options at `plies`, comparing plays by `measure` (a match's end
    /// values for the mover; `None`: equity).
    fn eval(&self, plies: u8, measure: Option<EndValues>) -> EvalOptions {
        EvalOptions {
            plies,
            deadline: self.deadline,
            cancel: self.cancel.clone(),
            measure,
        }
    }

    fn check(&self) -> Result<(), EvalError> {
        StopWhen {
            deadline: self.deadline,
            cancel: self.cancel.as_ref(),
        }
        .check()
    }
}

/// The analysis of one turn.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnAnalysis {
    /// 0-based index of the game in the record.
    pub game_index: usize,
    /// The game number as written.
    pub game_number: u32,
    /// 1-based turn of the game (plays of both players counted).
    pub turn: u32,
    /// The move number of the record's line (`" 12)"`).
    pub move_number: u32,
    /// The mover (White = the left player).
    pub side: Side,
    /// The position before the roll, the mover to move.
    pub position: Position,
    /// The roll.
    pub dice: Dice,
    /// The play as written in the record.
    pub written: String,
    /// The play made (canonical notation, resulting position, outcome).
    pub play: Play,
    /// Legal plays of the roll (1: forced).
    pub legal_plays: usize,
    /// The best play found.
    pub best: Play,
    /// Mover's equity after the best play, points.
    pub best_equity: f32,
    /// Mover's equity after the play made, points.
    pub played_equity: f32,
    /// Mover's probabilities after the play made.
    pub played_probabilities: Probabilities,
    /// `best_equity - played_equity`, ≥ 0; 0 for a forced play.
    pub error: f32,
    /// The error's mark.
    pub mark: Mark,
    /// Mover's equity before the roll: the mean over the 21 rolls of the best play's
    /// equity at `luck_plies`.
    pub equity_before: f32,
    /// Mover's equity after this roll with its best play at `luck_plies`.
    pub equity_after_roll: f32,
    /// `equity_after_roll - equity_before`, points.
    pub luck: f32,
    /// The luck's mark.
    pub luck_mark: LuckMark,
    /// How the plays were valued: `2-ply` (the search's depth), or `rollout` for a
    /// flagged turn whose plays were rolled out.
    pub evaluation: String,
    /// For a turn whose plays were rolled out: the rollouts' figures and the search's
    /// verdict.
    pub rollout: Option<RolloutVerdict>,
    /// In a match game covered by the match equity table: the mover's end values,
    /// which ranked the plays; the equities, errors and luck above are then
    /// normalised equities (GNU Backgammon's EMG, [`EvalOptions::points`]).
    /// `None`: cubeless equity (a session without a length).
    pub measure: Option<EndValues>,
    /// With `measure`: the mover's match winning chance after the play made and after
    /// the best play, in `[0, 1]`.
    pub match_winning_chance: Option<(f64, f64)>,
}

/// One player's figures over a game or a match.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlayerStats {
    /// Turns played (forced ones and passes included).
    pub moves: u32,
    /// Turns with more than one legal play.
    pub unforced: u32,
    /// Turns by mark: none, doubtful, bad, very bad.
    pub marks: [u32; 4],
    /// Sum of the errors of the turns with a choice, points.
    pub total_error: f64,
    /// Sum of the luck of every turn, points.
    pub total_luck: f64,
}

impl PlayerStats {
    fn add_turn(&mut self, t: &TurnAnalysis) {
        self.moves += 1;
        if t.legal_plays > 1 {
            self.unforced += 1;
            self.total_error += t.error as f64;
        }
        self.marks[t.mark as usize] += 1;
        self.total_luck += t.luck as f64;
    }

    /// Adds another player's (or game's) figures to these.
    pub fn add(&mut self, o: &PlayerStats) {
        self.moves += o.moves;
        self.unforced += o.unforced;
        for i in 0..4 {
            self.marks[i] += o.marks[i];
        }
        self.total_error += o.total_error;
        self.total_luck += o.total_luck;
    }

    /// Average error per move with a choice, in thousandths of a point (0 without one).
    pub fn error_rate_milli(&self) -> f64 {
        if self.unforced == 0 {
            0.0
        } else {
            1000.0 * self.total_error / self.unforced as f64
        }
    }

    /// Average luck per move, in thousandths of a point.
    pub fn luck_rate_milli(&self) -> f64 {
        if self.moves == 0 {
            0.0
        } else {
            1000.0 * self.total_luck / self.moves as f64
        }
    }

    /// GNU Backgammon's chequer-play rating of the error per move with a choice:
    /// below 0.002 "Supernatural", 0.005 "World class", 0.008 "Expert", 0.012
    /// "Advanced", 0.018 "Intermediate", 0.026 "Casual player", 0.035 "Beginner",
    /// else "Awful!"; "n/a" without a move with a choice (GNU Backgammon `analysis.c`).
    pub fn rating(&self) -> &'static str {
        if self.unforced == 0 {
            return "n/a";
        }
        let e = self.total_error / self.unforced as f64;
        const RATINGS: [(f64, &str); 7] = [
            (0.002, "Supernatural"),
            (0.005, "World class"),
            (0.008, "Expert"),
            (0.012, "Advanced"),
            (0.018, "Intermediate"),
            (0.026, "Casual player"),
            (0.035, "Beginner"),
        ];
        RATINGS
            .iter()
            .find(|(t, _)| e < *t)
            .map_or("Awful!", |(_, n)| n)
    }

    /// GNU Backgammon's luck rating of the luck per move: above 0.06 "Go to Las
    /// Vegas", 0.03 "Good dice, man!", below −0.06 "Go to bed", −0.03 "Bad dice,
    /// man!", else "None".
    pub fn luck_rating(&self) -> &'static str {
        if self.moves == 0 {
            return "n/a";
        }
        let r = 10.0 * self.total_luck / self.moves as f64;
        if r > 0.6 {
            "Go to Las Vegas"
        } else if r > 0.3 {
            "Good dice, man!"
        } else if r < -0.6 {
            "Go to bed"
        } else if r < -0.3 {
            "Bad dice, man!"
        } else {
            "None"
        }
    }
}

/// The summary of one game.
#[derive(Clone, Debug, PartialEq)]
pub struct GameSummary {
    /// 0-based index of the game in the record.
    pub game_index: usize,
    /// The game number as written.
    pub game_number: u32,
    /// The variant.
    pub variant: Variant,
    /// `[White (left), Black (right)]` names.
    pub players: [String; 2],
    /// The result, e.g. `white wins 2 (mars)`, `black wins 1 (drop)`, `not finished`.
    pub result: String,
    /// Per player, indexed by [`Side::index`].
    pub stats: [PlayerStats; 2],
    /// Cube actions read (and not analysed).
    pub cube_actions: u32,
    /// Remarks: cube actions, a result that differs from Tavli's scoring, a
    /// resignation, a roll without a play.
    pub notes: Vec<String>,
    /// What its errors and luck are measured in ([`error_measure`]).
    pub error_measure: &'static str,
}

/// The summary of the whole record.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchSummary {
    /// `[White (left), Black (right)]` names (of the first game).
    pub players: [String; 2],
    /// Per player over all games.
    pub stats: [PlayerStats; 2],
    /// Games analysed.
    pub games: u32,
}

/// What the analysis reports as it goes.
#[derive(Debug)]
pub enum Event<'a> {
    /// One turn analysed.
    Turn(&'a TurnAnalysis),
    /// One game finished.
    Game(&'a GameSummary),
}

/// The result text of a game.
fn result_text(g: &GameRecord) -> String {
    match &g.end {
        None => match g.actions.iter().rev().find_map(|a| match &a.kind {
            ActionKind::Play(t) => t.play.outcome,
            _ => None,
        }) {
            Some(o) => o.to_string(),
            None => "not finished".to_string(),
        },
        Some(e) => {
            let who = e
                .winner
                .map_or("draw".to_string(), |w| format!("{w} wins {}", e.points));
            match e.how {
                EndReason::Board(o) if e.winner.is_some() => format!("{who} ({})", o.reason.name()),
                EndReason::Board(o) => format!("draw ({})", o.reason.name()),
                EndReason::Drop => format!("{who} (double dropped)"),
                EndReason::Resign => format!("{who} (resignation)"),
                EndReason::TimeOut => format!("{who} (time-out)"),
            }
        }
    }
}

/// Notes of a game: what the analysis leaves out or what differs from Tavli's rules.
fn notes(g: &GameRecord) -> Vec<String> {
    let mut out = Vec::new();
    let cube = g.cube_actions();
    if cube > 0 {
        out.push(format!(
            "{cube} cube action{} read and not analysed: Tavli is cubeless; the plays are analysed cubeless",
            if cube == 1 { "" } else { "s" }
        ));
    }
    if let Some(e) = &g.end {
        match e.how {
            EndReason::Board(o)
                if e.winner.is_some() && e.points != o.points as u32 && cube == 0 =>
            {
                out.push(format!(
                    "the record scores {} points; under {} rules the game is worth {} (R7: no 3-point games)",
                    e.points, g.variant, o.points
                ));
            }
            EndReason::Resign => out.push("ended by resignation".to_string()),
            EndReason::TimeOut => out.push("ended by time-out".to_string()),
            _ => {}
        }
    }
    for a in &g.actions {
        if let ActionKind::Roll(d) = a.kind {
            out.push(format!(
                "move {}: {} rolled {d} and resigned without playing (not analysed)",
                a.number, a.side
            ));
        }
    }
    out
}

/// The index of `d` among [`Dice::all_rolls`] (either order of the dice).
fn roll_index(d: Dice) -> usize {
    Dice::all_rolls()
        .iter()
        .position(|r| r.high() == d.high() && r.low() == d.low())
        .expect("a roll is one of the 21")
}

/// The luck of rolling `dice` in `pos` at `plies`: `(before, after, luck)` where
/// `before` is the mean over the 21 rolls of the mover's best equity at `plies`
/// (GNU Backgammon's `LuckNormal`). `after_known`: the best equity of `dice` at
/// `plies` when the caller has it. With `measure` (a match's end values for the
/// mover), the best play of each roll is by it and "equity" is its normalised
/// equity ([`EvalOptions::points`]), as GNU Backgammon measures match-play luck.
pub fn luck(
    evaluator: &dyn PositionEvaluator,
    pos: &Position,
    dice: Dice,
    plies: u8,
    opts: &AnalysisOptions,
    after_known: Option<f32>,
    measure: Option<EndValues>,
) -> Result<(f32, f32, f32), EvalError> {
    let eval = opts.eval(plies, measure);
    let mine = roll_index(dice);
    let mut mean = 0f64;
    let mut after = 0f32;
    for (k, roll) in Dice::all_rolls().into_iter().enumerate() {
        opts.check()?;
        let best = match after_known {
            Some(v) if k == mine => v,
            _ => {
                let best = &evaluator.rank_plays(pos, roll, eval.clone())?[0];
                match measure {
                    None => best.equity,
                    Some(_) => eval.points(&best.probabilities),
                }
            }
        };
        if k == mine {
            after = best;
        }
        let w = if roll.is_double() { 1.0 } else { 2.0 };
        mean += w * best as f64 / 36.0;
    }
    let before = mean as f32;
    Ok((before, after, (after as f64 - mean) as f32))
}

/// How a play made compares with the best play of its roll: what `AnalyzeGame`
/// reports for a turn and `Evaluate` for a play to grade ([`grade_play`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Grade {
    /// The best play found: the ranking's first, or the play made when it values
    /// higher (or is forced).
    pub best: Play,
    /// Mover's equity after the best play, points (with a measure, its normalised
    /// equity: [`EvalOptions::points`]; so are `played_equity` and `error`).
    pub best_equity: f32,
    /// Mover's probabilities after the best play.
    pub best_probabilities: Probabilities,
    /// Mover's equity after the play made, points.
    pub played_equity: f32,
    /// Mover's probabilities after the play made.
    pub played_probabilities: Probabilities,
    /// The depth that valued the play made (and the best play): the ranking's.
    pub plies: u8,
    /// `best_equity - played_equity`, ≥ 0; 0 for a forced play.
    pub error: f32,
    /// The error's mark ([`Thresholds::mark`]); none for a forced play.
    pub mark: Mark,
}

/// Grades `played`, one of the `legal_plays` plays of a roll, against `ranked`, that
/// roll's ranking at `opts.plies` ([`PositionEvaluator::rank_plays`], best first):
/// the play made is valued at the same depth as the best play (the ranking's value
/// when it is the ranking's first or the depth is 0; otherwise its resulting position
/// is searched on its own at `opts.plies`, also when the move filter left it at
/// 0 plies); the error is the best equity minus the play's, never negative (a play
/// that values higher than the ranking's first becomes the best); a forced play has
/// error 0 and no mark. The one method of `AnalyzeGame`'s turns and `Evaluate`'s
/// `grade`. With [`EvalOptions::measure`] (a match), `ranked` must be ranked by it
/// and the values compared are normalised equities ([`EvalOptions::points`]), as
/// GNU Backgammon measures match-play errors; without it, the equities bit for bit.
///
/// Errors: [`EvalError::DeadlineExceeded`], [`EvalError::Cancelled`] (checked before
/// the search), and the evaluator's.
pub fn grade_play(
    evaluator: &dyn PositionEvaluator,
    played: &Play,
    legal_plays: usize,
    ranked: &[RankedPlay],
    thresholds: &Thresholds,
    opts: &EvalOptions,
) -> Result<Grade, EvalError> {
    let idx = ranked
        .iter()
        .position(|r| r.play.position == played.position);
    // Points by the ranking's measure: the equity itself without one (bit for bit).
    let points = |r: &RankedPlay| match opts.measure {
        None => r.equity,
        Some(_) => opts.points(&r.probabilities),
    };
    let (played_equity, played_probabilities) = match idx {
        Some(i) if i == 0 || opts.plies == 0 => (points(&ranked[i]), ranked[i].probabilities),
        _ => {
            // Not the ranking's first: searched on its own at the same depth.
            opts.check()?;
            let e = evaluator.evaluate(&played.position, opts.clone())?;
            let p = e.probabilities.flip();
            (opts.points(&p), p)
        }
    };
    let top = points(&ranked[0]);
    let (best, best_equity, best_probabilities) = if played_equity > top || legal_plays == 1 {
        (played.clone(), played_equity, played_probabilities)
    } else {
        (ranked[0].play.clone(), top, ranked[0].probabilities)
    };
    let error = if legal_plays == 1 {
        0.0
    } else {
        (best_equity - played_equity).max(0.0)
    };
    let mark = if legal_plays > 1 {
        thresholds.mark(error)
    } else {
        Mark::None
    };
    Ok(Grade {
        best,
        best_equity,
        best_probabilities,
        played_equity,
        played_probabilities,
        plies: opts.plies,
        error,
        mark,
    })
}

/// Analyses one turn: error, mark ([`grade_play`]), luck; in a match game at `score`
/// (covered by the match equity table), all of them in normalised equity from the
/// mover's match winning chances.
fn analyze_turn(
    evaluator: &dyn PositionEvaluator,
    t: &crate::record::Turn,
    opts: &AnalysisOptions,
    score: Option<&MatchScore>,
) -> Result<TurnAnalysis, EvalError> {
    opts.check()?;
    let measure = score.map(|s| s.end_values(t.position.variant, t.position.turn));
    let eval = opts.eval(opts.plies, measure);
    let ranked = evaluator.rank_plays(&t.position, t.dice, eval.clone())?;
    let g = grade_play(
        evaluator,
        &t.play,
        t.legal_plays,
        &ranked,
        &opts.thresholds,
        &eval,
    )?;
    // The roll's own ranking is the luck's one when the depths agree (and the dice are
    // in the order of `Dice::all_rolls`, so that the filter sees the same plays).
    let top = match measure {
        None => ranked[0].equity,
        Some(_) => eval.points(&ranked[0].probabilities),
    };
    let after_known =
        (opts.luck_plies == opts.plies && t.dice.die1() >= t.dice.die2()).then_some(top);
    let (equity_before, equity_after_roll, luck) = luck(
        evaluator,
        &t.position,
        t.dice,
        opts.luck_plies,
        opts,
        after_known,
        measure,
    )?;
    let mut ta = TurnAnalysis {
        game_index: 0,
        game_number: 0,
        turn: 0,
        move_number: 0,
        side: t.position.turn,
        position: t.position,
        dice: t.dice,
        written: t.written.trim().to_string(),
        play: t.play.clone(),
        legal_plays: t.legal_plays,
        best: g.best,
        best_equity: g.best_equity,
        played_equity: g.played_equity,
        played_probabilities: g.played_probabilities,
        error: g.error,
        mark: g.mark,
        equity_before,
        equity_after_roll,
        luck,
        luck_mark: LuckMark::of(luck),
        evaluation: format!("{}-ply", opts.plies),
        rollout: None,
        measure,
        match_winning_chance: measure.map(|m| {
            let v = |p: &Probabilities| m.value(p).clamp(0.0, 1.0);
            (v(&g.played_probabilities), v(&g.best_probabilities))
        }),
    };
    if let Some(check) = opts.rollout.filter(|_| ta.mark != Mark::None) {
        roll_out_turn(evaluator, &mut ta, &ranked, &check, opts)?;
    }
    Ok(ta)
}

/// The rollout of the position after `play` (the opponent to move, no dice), turned
/// to the mover's view: `(probabilities, equity, standard error of the equity)`; with
/// `measure`, the normalised equity and a bound of its standard error
/// ([`EndValues::standard_error_bound`] over [`EndValues::per_point`]).
fn roll_out_play(
    evaluator: &dyn PositionEvaluator,
    play: &Play,
    check: &RolloutCheck,
    opts: &AnalysisOptions,
    measure: Option<EndValues>,
) -> Result<(Probabilities, f32, f32), EvalError> {
    let cfg = RolloutConfig {
        plies: check.plies,
        trials: check.trials,
        seed: check.seed,
        ..RolloutConfig::default()
    };
    let stop = StopWhen {
        deadline: opts.deadline,
        cancel: opts.cancel.as_ref(),
    };
    let r = evaluator.rollout(&play.position, None, &cfg, stop, &mut |_| {
        std::ops::ControlFlow::Continue(())
    })?;
    let p = r.probabilities.flip();
    let se = &r.standard_errors;
    Ok(match measure {
        None => (p, p.equity(), se.equity),
        Some(m) => {
            let f = |x: f32| x as f64;
            // The mover's view: its wins are the rollout's losses.
            let bound =
                m.standard_error_bound(f(se.lose), f(se.lose_mars), f(se.win_mars), f(se.draw));
            let points = opts.eval(0, measure).points(&p);
            (p, points, (bound / m.per_point()) as f32)
        }
    })
}

/// Rolls out the play made and the best [`RolloutCheck::candidates`] plays of
/// `ranked` (best first), then sets the turn's best play, equities, error and mark
/// from the rollouts; the search's verdict goes to [`TurnAnalysis::rollout`].
fn roll_out_turn(
    evaluator: &dyn PositionEvaluator,
    ta: &mut TurnAnalysis,
    ranked: &[RankedPlay],
    check: &RolloutCheck,
    opts: &AnalysisOptions,
) -> Result<(), EvalError> {
    let mut plays: Vec<Play> = vec![ta.play.clone()];
    for r in ranked.iter().take(check.candidates.max(1)) {
        if plays.iter().all(|p| p.position != r.play.position) {
            plays.push(r.play.clone());
        }
    }
    let mut values = Vec::with_capacity(plays.len());
    for p in &plays {
        opts.check()?;
        values.push(roll_out_play(evaluator, p, check, opts, ta.measure)?);
    }
    // The best rollout equity; the play made (index 0) wins ties.
    let mut best = 0;
    for (i, v) in values.iter().enumerate().skip(1) {
        if v.1 > values[best].1 {
            best = i;
        }
    }
    let verdict = RolloutVerdict {
        trials: check.trials,
        plies: check.plies,
        candidates: plays.len(),
        best_standard_error: values[best].2,
        played_standard_error: values[0].2,
        search_error: ta.error,
        search_mark: ta.mark,
        search_best: ta.best.clone(),
    };
    ta.best = plays.swap_remove(best);
    ta.best_equity = values[best].1;
    ta.played_equity = values[0].1;
    ta.played_probabilities = values[0].0;
    if let Some(m) = ta.measure {
        let v = |p: &Probabilities| m.value(p).clamp(0.0, 1.0);
        ta.match_winning_chance = Some((v(&values[0].0), v(&values[best].0)));
    }
    ta.error = (ta.best_equity - ta.played_equity).max(0.0);
    ta.mark = opts.thresholds.mark(ta.error);
    ta.evaluation = "rollout".to_string();
    ta.rollout = Some(verdict);
    Ok(())
}

/// The score before game `g` of `record` when it is a match game the match equity
/// table covers: the record's score line (for a text record checked against the
/// ends of the games before, for structured games their sums: as AdvanceMatch adds
/// them, R2). `None` for a session without a length, and for a game of a match
/// longer than the table covers while a side is more than 25 points away (such a
/// game is measured in equity).
pub fn game_score(record: &MatchRecord, g: &GameRecord) -> Option<MatchScore> {
    (record.length > 0)
        .then(|| MatchScore::new(record.length, g.score).ok())
        .flatten()
}

/// What the errors and luck of a game are measured in: `equity` (cubeless equity,
/// points) or, for a match game at a score ([`game_score`]), `normalized_equity` (the
/// normalised equity of the mover's match winning chances, GNU Backgammon's EMG, in
/// points: the thresholds and ratings mean the same).
pub fn error_measure(match_game: bool) -> &'static str {
    if match_game {
        "normalized_equity"
    } else {
        "equity"
    }
}

/// Analyses every game of `record`, calling `on` after each turn and each game (in
/// order); `on` returning `false` stops the work with [`EvalError::Cancelled`]. The
/// turns of a match game are measured by the mover's match winning chance at the
/// game's score ([`game_score`], [`TurnAnalysis::measure`]); a session without a
/// length in cubeless equity.
///
/// Errors: [`EvalError::DeadlineExceeded`], [`EvalError::Cancelled`],
/// [`EvalError::Unavailable`] (no evaluator for a variant's contact positions), and
/// evaluation errors of the positions (none for a record that replayed).
pub fn analyze(
    record: &MatchRecord,
    evaluator: &dyn PositionEvaluator,
    opts: &AnalysisOptions,
    on: &mut dyn FnMut(Event<'_>) -> bool,
) -> Result<MatchSummary, EvalError> {
    let mut total = [PlayerStats::default(), PlayerStats::default()];
    for (gi, g) in record.games.iter().enumerate() {
        let mut stats = [PlayerStats::default(), PlayerStats::default()];
        let mut turn = 0;
        let score = game_score(record, g);
        for a in &g.actions {
            let ActionKind::Play(t) = &a.kind else {
                continue;
            };
            turn += 1;
            let mut ta = analyze_turn(evaluator, t, opts, score.as_ref())?;
            ta.game_index = gi;
            ta.game_number = g.number;
            ta.turn = turn;
            ta.move_number = a.number;
            stats[a.side.index()].add_turn(&ta);
            if !on(Event::Turn(&ta)) {
                return Err(EvalError::Cancelled);
            }
        }
        for s in [Side::White, Side::Black] {
            total[s.index()].add(&stats[s.index()]);
        }
        let summary = GameSummary {
            game_index: gi,
            game_number: g.number,
            variant: g.variant,
            players: g.players.clone(),
            result: result_text(g),
            stats,
            cube_actions: g.cube_actions() as u32,
            notes: notes(g),
            error_measure: error_measure(score.is_some()),
        };
        if !on(Event::Game(&summary)) {
            return Err(EvalError::Cancelled);
        }
    }
    Ok(MatchSummary {
        players: record
            .games
            .first()
            .map_or([String::new(), String::new()], |g| g.players.clone()),
        stats: total,
        games: record.games.len() as u32,
    })
}
