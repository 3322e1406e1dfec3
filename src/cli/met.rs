//! `tavli-engine met`: the match equity table (docs/match-equity.md). Prints the
//! committed table; `--generate` measures its distributions again; `--check`
//! compares it with simulated matches.

use clap::{Args, ValueEnum};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::rollout::Luck;
use tavli_engine::matchequity::measure::{measure, MeasureConfig};
use tavli_engine::matchequity::simulate::{check, standard_points, CheckConfig, PointResult};
use tavli_engine::matchequity::{Distributions, MatchEquityTable, MetState, Starter, MAX_AWAY};
use tavli_engine::rules::Variant;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The luck adjustment of `--generate`'s rollouts.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LuckArg {
    /// None (the default: at 0 ply the cheapest for a given precision).
    Off,
    /// Every play of every roll valued.
    All,
    /// Pubeval's best 4 plays valued in Portes.
    Pruned,
}

/// Arguments of `tavli-engine met`.
#[derive(Args, Debug)]
pub struct MetArgs {
    /// Print the entries of a match of this many points only (1..=25), rows and
    /// columns by score; default: every away up to 25.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=MAX_AWAY as i64))]
    length: Option<u32>,
    /// Print JSON instead of text (the table, or with --generate the distributions).
    #[arg(long)]
    json: bool,
    /// Build the table from this distributions file instead of the committed one
    /// (data/met-distributions.json).
    #[arg(long, value_name = "FILE")]
    distributions: Option<PathBuf>,
    /// Measure the distributions again with rollouts and print (or --out) the data
    /// file.
    #[arg(long, conflicts_with_all = ["check", "length", "distributions"])]
    generate: bool,
    /// Simulate matches of the engine against itself from a set of scores and compare
    /// them with the table.
    #[arg(long, conflicts_with_all = ["generate", "length"])]
    check: bool,
    /// --generate: trials per variant (a multiple of --batches).
    #[arg(long, default_value_t = MeasureConfig::default().trials)]
    trials: u64,
    /// --generate: independent rollouts per variant, for the standard errors.
    #[arg(long, default_value_t = MeasureConfig::default().batches)]
    batches: u32,
    /// --generate: the rollouts' luck adjustment.
    #[arg(long, value_enum, default_value = "off")]
    luck: LuckArg,
    /// --check: matches per score.
    #[arg(long, default_value_t = 4000)]
    matches: u32,
    /// --generate, --check: the seed (the same seed gives the same answer).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// --generate, --check: worker threads (0: one per core); the answer does not
    /// depend on it.
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// --generate: write the data file here instead of printing it.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Runs `met` and returns the text to print.
pub fn run(a: MetArgs) -> Result<String, BoxError> {
    if a.generate {
        return generate(&a);
    }
    let owned;
    let table = match &a.distributions {
        None => MatchEquityTable::builtin(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("distributions: {}: {e}", path.display()))?;
            let d = Distributions::from_json(&text)?;
            owned = MatchEquityTable::new(d.by_variant()?, MAX_AWAY)?;
            &owned
        }
    };
    if a.check {
        return check_text(&a, table);
    }
    let max = a.length.unwrap_or(MAX_AWAY);
    if a.json {
        return table_json(table, a.length);
    }
    let mut out = String::new();
    let by_score = a.length.is_some();
    match a.length {
        Some(l) => writeln!(
            out,
            "Match winning chance (%) of this side in a {l}-point match; rows: its \
             score, columns: the other side's score"
        )?,
        None => writeln!(
            out,
            "Match winning chance (%) of this side; rows: points it needs (away), \
             columns: points the other side needs"
        )?,
    }
    writeln!(
        out,
        "from the starter's outcome distributions (%): win single, win mars, lose single, \
         lose mars, draw"
    )?;
    for (v, d) in Variant::ALL.into_iter().zip(table.distributions()) {
        write!(out, "  {:<8}", v.name())?;
        for p in d.as_array() {
            write!(out, "{:>7.2}", 100.0 * p)?;
        }
        writeln!(out)?;
    }
    for v in Variant::ALL {
        for st in Starter::ALL {
            writeln!(out, "\n{} next, {}:", v.name(), starter_text(st))?;
            // Rows and columns as aways 1..=max; by score they run max-1 .. 0.
            let label = |away: u32| if by_score { max - away } else { away };
            let order: Vec<u32> = if by_score {
                (1..=max).rev().collect()
            } else {
                (1..=max).collect()
            };
            write!(out, "{:>5}", "")?;
            for &b in &order {
                write!(out, "{:>6}", label(b))?;
            }
            writeln!(out)?;
            for &aw in &order {
                write!(out, "{:>5}", label(aw))?;
                for &b in &order {
                    let p = table.mwc_state(&MetState {
                        away: aw,
                        other_away: b,
                        variant: v,
                        starter: st,
                    })?;
                    write!(out, "{:>6.1}", 100.0 * p)?;
                }
                writeln!(out)?;
            }
        }
    }
    Ok(out)
}

fn starter_text(s: Starter) -> &'static str {
    match s {
        Starter::ThisSide => "this side starts",
        Starter::OtherSide => "the other side starts",
        Starter::OpeningRoll => "opening roll",
    }
}

/// The table as JSON: `mwc[i][j]` for this side `i + 1` away and the other `j + 1`.
fn table_json(table: &MatchEquityTable, length: Option<u32>) -> Result<String, BoxError> {
    let max = length.unwrap_or(table.max_away());
    let mut tables = Vec::new();
    for v in Variant::ALL {
        for st in Starter::ALL {
            let mut rows = Vec::new();
            for aw in 1..=max {
                let mut row = Vec::new();
                for b in 1..=max {
                    row.push(table.mwc_state(&MetState {
                        away: aw,
                        other_away: b,
                        variant: v,
                        starter: st,
                    })?);
                }
                rows.push(row);
            }
            tables.push(serde_json::json!({
                "variant": v.name(),
                "starter": st.name(),
                "mwc": rows,
            }));
        }
    }
    let d = table.distributions();
    let dist: Vec<_> = Variant::ALL
        .iter()
        .zip(d)
        .map(|(v, d)| serde_json::json!({"variant": v.name(), "probabilities": d}))
        .collect();
    let doc = serde_json::json!({
        "max_away": max,
        "length": length,
        "distributions": dist,
        "tables": tables,
    });
    let mut s = serde_json::to_string_pretty(&doc)?;
    s.push('\n');
    Ok(s)
}

fn generate(a: &MetArgs) -> Result<String, BoxError> {
    let cfg = MeasureConfig {
        trials: a.trials,
        batches: a.batches,
        seed: a.seed,
        luck: match a.luck {
            LuckArg::Off => Luck::Off,
            LuckArg::All => Luck::AllPlays,
            LuckArg::Pruned => Luck::Pruned,
        },
        threads: a.threads,
    };
    let command = format!(
        "tavli-engine met --generate --trials {} --batches {} --luck {} --seed {}",
        a.trials,
        a.batches,
        format!("{:?}", a.luck).to_lowercase(),
        a.seed
    );
    let engine = Engine::load_default();
    let start = Instant::now();
    let d = measure(&engine, &cfg, &command, &mut |v, k| {
        if k % 10 == 0 || k == cfg.batches {
            eprintln!(
                "{}: {k}/{} batches, {:.0} s",
                v.name(),
                cfg.batches,
                start.elapsed().as_secs_f64()
            );
        }
    })?;
    let text = d.to_json();
    match &a.out {
        Some(path) => {
            std::fs::write(path, &text).map_err(|e| format!("out: {}: {e}", path.display()))?;
            Ok(summary(&d))
        }
        None if a.json => Ok(text),
        None => Ok(format!("{}{}", summary(&d), text)),
    }
}

/// The measured distributions as a text table (percent ± standard error).
fn summary(d: &Distributions) -> String {
    let mut out = String::from(
        "variant  evaluator          trials    win single     win mars       lose single    lose mars      draw\n",
    );
    for v in &d.variants {
        let (p, e) = (v.probabilities.as_array(), v.standard_errors.as_array());
        let _ = write!(out, "{:<8} {:<18} {:>7}", v.variant, v.evaluator, v.trials);
        for k in 0..5 {
            let _ = write!(out, "  {:>6.3} ± {:.3}", 100.0 * p[k], 100.0 * e[k]);
        }
        out.push('\n');
    }
    out
}

fn check_text(a: &MetArgs, table: &MatchEquityTable) -> Result<String, BoxError> {
    let engine = Engine::load_default();
    let points = standard_points();
    let cfg = CheckConfig {
        matches: a.matches,
        seed: a.seed,
        threads: a.threads,
    };
    let start = Instant::now();
    let n = points.len();
    let results = check(&engine, table, &points, &cfg, &mut |k| {
        eprintln!("{k}/{n} scores, {:.0} s", start.elapsed().as_secs_f64());
    })?;
    if a.json {
        let rows: Vec<_> = results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "length": r.state.length,
                    "score": r.state.score,
                    "variant": r.state.variant.name(),
                    "starter": r.state.starter.map(|s| s.name()),
                    "table": r.table,
                    "simulated": r.mwc(),
                    "ci95": r.ci95(),
                    "matches": r.matches,
                    "games": r.games,
                    "draws": r.draws,
                    "cut": r.cut,
                })
            })
            .collect();
        let mut s = serde_json::to_string_pretty(&rows)?;
        s.push('\n');
        return Ok(s);
    }
    Ok(check_markdown(&results, a.seed))
}

/// The check's results as a Markdown table (White is "this side") and a summary.
fn check_markdown(results: &[PointResult], seed: u64) -> String {
    let mut out = String::from(
        "| length | score (W–B) | next | starter | table | simulated ± 95 % | matches | games | inside |\n\
         |---:|---|---|---|---:|---:|---:|---:|---|\n",
    );
    for r in results {
        let s = &r.state;
        let _ = writeln!(
            out,
            "| {} | {}–{} | {} | {} | {:.3} | {:.3} ± {:.3} | {} | {} | {} |",
            s.length,
            s.score[0],
            s.score[1],
            s.variant.name(),
            s.starter.map_or("opening roll", |w| w.name()),
            r.table,
            r.mwc(),
            r.ci95(),
            r.matches,
            r.games,
            if r.agrees() { "yes" } else { "no" }
        );
    }
    let inside = results.iter().filter(|r| r.agrees()).count();
    let chi2: f64 = results
        .iter()
        .map(|r| {
            let se = r.ci95() / 1.96;
            if se > 0.0 {
                ((r.mwc() - r.table) / se).powi(2)
            } else {
                0.0
            }
        })
        .sum();
    let games: u64 = results.iter().map(|r| r.games).sum();
    let (draws, cut): (u64, u64) = results
        .iter()
        .fold((0, 0), |acc, r| (acc.0 + r.draws, acc.1 + r.cut));
    let _ = writeln!(
        out,
        "\n{inside} of {} table entries inside the simulation's 95 % interval; sum of \
         squared z-scores {chi2:.1} on {} degrees of freedom; {games} games ({draws} \
         drawn, {cut} cut); seed {seed}",
        results.len(),
        results.len()
    );
    out
}
