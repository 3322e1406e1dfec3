//! `tavli-engine analyze RECORD... [--plies N] [--luck-plies N] [--rollout] [--json]
//! [--svg FILE] [--shard INDEX/COUNT] [--output FILE]`, `tavli-engine analyze --merge
//! SHARD...`: the `AnalyzeGame` RPC from the command line. A progress bar on stderr
//! when it is a terminal; a table per game and the summary on stdout (or, with
//! `--json`, every stream message as proto3 JSON, one object after another as grpcurl
//! prints a stream); with `--svg FILE` one picture per game, `FILE-1.svg`,
//! `FILE-2.svg`, ... (`FILE` without its `.svg`): both players' winning chances after
//! every turn with the marked plays circled. With `--rollout` the flagged plays are
//! rolled out (`AnalyzeGameRequest.rollout`) and each such turn gets a line with the
//! rollouts' figures under it.
//!
//! # Many records, shards and the merge (docs/records.md, "Many records")
//!
//! The records are the files given, a directory standing for its files (not those
//! whose name starts with `.`) sorted by name. One record prints as above; with more,
//! each record's output is a *section*: `==> NAME <==` and its text, a blank line
//! between sections (as `head` prints several files), or with `--json` one object
//! `{"record": NAME, "messages": [...]}` per record.
//!
//! `--shard INDEX/COUNT` analyses only the records `k` with `k mod COUNT == INDEX`
//! (round-robin over the list; `INDEX` defaults to `JOB_COMPLETION_INDEX`, which a
//! Kubernetes Indexed Job sets in each pod: `--shard /COUNT`) and writes a *shard
//! file* (JSON Lines): a header `{"tavli_analyze_shard": 1, "shard", "count",
//! "records", "list", "options"}` (`list`: FNV-1a 64 of the record names in order,
//! hex) and one line `{"record": k, "name", "output"}` per record, `output` its
//! section. `--merge` reads the shard files (or directories of them) of the `COUNT`
//! shards, checks they are one run's (same count, list and options, every shard and
//! record once) and prints the sections in record order: byte for byte the output of
//! the same command without `--shard`.

use clap::Args;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::Path;
use tavli_engine::eval::net::fnv1a64;
use tavli_engine::service::analyze::run_analysis;
use tavli_engine::service::pb::analyze_game_response::Item;
use tavli_engine::service::{json, pb, TavliEngineService};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The environment variable a Kubernetes Indexed Job sets to the pod's completion
/// index, the default `INDEX` of `--shard`.
pub const SHARD_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// The format number of shard files (`"tavli_analyze_shard"` in their header).
const SHARD_FORMAT: u64 = 1;

/// Options of `tavli-engine analyze`.
#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// The record files (docs/records.md: MAT text, a Tavli variant after each game
    /// number), directories (their files, sorted by name), or `-` for standard input;
    /// with --merge, the shard files or directories of them.
    #[arg(required = true, num_args = 1.., value_name = "RECORD")]
    pub records: Vec<String>,
    /// Depth of the play evaluations, 0..=2.
    #[arg(long, default_value_t = 0)]
    pub plies: u32,
    /// Depth of the luck evaluations, 0..=2 (each ply costs 21 rankings per turn).
    #[arg(long, default_value_t = 0)]
    pub luck_plies: u32,
    /// Error thresholds of the marks doubtful, bad, very bad (points).
    #[arg(long, value_delimiter = ',', num_args = 3, default_values_t = [0.04f32, 0.08, 0.16])]
    pub thresholds: Vec<f32>,
    /// Roll out the plays of every turn marked doubtful or worse (the play made and
    /// the best --rollout-candidates plays): the marks are then the rollouts'.
    #[arg(long)]
    pub rollout: bool,
    /// Trials per rolled-out play (with --rollout).
    #[arg(long, default_value_t = 1296, requires = "rollout")]
    pub rollout_trials: u32,
    /// Depth of the search that chooses the plays in the trials, 0 or 1 (with
    /// --rollout).
    #[arg(long, default_value_t = 0, requires = "rollout")]
    pub rollout_plies: u32,
    /// The best this many plays of the ranking are rolled out, with the play made
    /// (with --rollout).
    #[arg(long, default_value_t = 3, requires = "rollout")]
    pub rollout_candidates: u32,
    /// Seed of the rollouts' dice (with --rollout).
    #[arg(long, default_value_t = 0, requires = "rollout")]
    pub seed: u64,
    /// Print every stream message as proto3 JSON (the shape grpcurl prints).
    #[arg(long)]
    pub json: bool,
    /// Draw each game's winning chances and marked plays: FILE-1.svg, FILE-2.svg, ...
    /// (one record only).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<String>,
    /// Analyse only the records k with k mod COUNT == INDEX and write a shard file
    /// for --merge. INDEX defaults to $JOB_COMPLETION_INDEX (Kubernetes Indexed
    /// Jobs): `--shard /COUNT`.
    #[arg(long, value_name = "INDEX/COUNT", conflicts_with = "svg")]
    pub shard: Option<String>,
    /// Merge the shard files given (or the files of the directories given) into the
    /// output of the run without --shard; the analysis options are the shards'.
    #[arg(long, conflicts_with_all = ["shard", "svg"])]
    pub merge: bool,
    /// Write the output to this file instead of stdout; with --shard, a directory
    /// (an existing one, or a name ending in `/`) gets the file
    /// `shard-INDEX-of-COUNT.jsonl`.
    #[arg(long, value_name = "FILE")]
    pub output: Option<String>,
}

/// Runs the command and returns what it prints on stdout (nothing with `--output`,
/// which gets it instead). `service()` is called only when there is something to
/// analyse (not for `--merge`).
pub fn run(
    a: AnalyzeArgs,
    service: impl FnOnce() -> TavliEngineService,
) -> Result<String, BoxError> {
    let (out, shard) = if a.merge {
        (merge_shards(&files(&a.records)?)?, None)
    } else {
        analyse_all(&a, service)?
    };
    let Some(path) = &a.output else {
        return Ok(out);
    };
    let path = match shard {
        // A shard into a directory: its own file there.
        Some((i, n)) if path.ends_with('/') || Path::new(path).is_dir() => {
            std::fs::create_dir_all(path).map_err(|e| format!("{path}: {e}"))?;
            Path::new(path).join(format!("shard-{i}-of-{n}.jsonl"))
        }
        _ => Path::new(path).to_path_buf(),
    };
    // Written beside (a hidden name, which a merge of the directory skips) and
    // renamed: a reader never sees half a file, and a pod that is restarted writes it
    // again whole.
    let name = path
        .file_name()
        .ok_or_else(|| format!("--output {path:?}: not a file name"))?;
    let tmp = path.with_file_name(format!(".{}.tmp", name.to_string_lossy()));
    let show = path.display();
    std::fs::write(&tmp, out).map_err(|e| format!("{show}: {e}"))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{show}: {e}"))?;
    Ok(String::new())
}

/// The files of `args`: each file as given, each directory's files (not those
/// whose name starts with `.`, not subdirectories) sorted by name; `-` as it is.
fn files(args: &[String]) -> Result<Vec<String>, BoxError> {
    let mut out = Vec::new();
    for arg in args {
        let path = Path::new(arg);
        if arg != "-" && path.is_dir() {
            let mut names = Vec::new();
            for e in std::fs::read_dir(path).map_err(|e| format!("{arg}: {e}"))? {
                let e = e.map_err(|e| format!("{arg}: {e}"))?;
                let hidden = e.file_name().to_string_lossy().starts_with('.');
                if !hidden && e.file_type().map_err(|e| format!("{arg}: {e}"))?.is_file() {
                    names.push(e.file_name());
                }
            }
            names.sort();
            out.extend(
                names
                    .iter()
                    .map(|n| path.join(n).to_string_lossy().into_owned()),
            );
        } else {
            out.push(arg.clone());
        }
    }
    if out.iter().any(|f| f == "-") && out.len() > 1 {
        return Err("`-` (standard input) is one record alone".into());
    }
    Ok(out)
}

/// `INDEX/COUNT` of `--shard` (`/COUNT`: INDEX from `index_env`, the value of
/// `JOB_COMPLETION_INDEX`). Errors: not that shape, COUNT 0, INDEX not below COUNT.
fn parse_shard(spec: &str, index_env: Option<&str>) -> Result<(u32, u32), BoxError> {
    let usage =
        || format!("--shard {spec:?}: give INDEX/COUNT, or /COUNT with ${SHARD_INDEX_ENV} set");
    let (index, count) = spec.split_once('/').ok_or_else(usage)?;
    let count: u32 = count.trim().parse().map_err(|_| usage())?;
    let index: u32 = match index.trim() {
        "" => {
            let v = index_env.ok_or_else(|| {
                format!("--shard /{count}: ${SHARD_INDEX_ENV} is not set (give INDEX/{count})")
            })?;
            v.trim()
                .parse()
                .map_err(|_| format!("${SHARD_INDEX_ENV}={v:?} is not a shard index"))?
        }
        i => i.parse().map_err(|_| usage())?,
    };
    if count == 0 || index >= count {
        return Err(
            format!("--shard {index}/{count}: INDEX must be below COUNT (0..{count})").into(),
        );
    }
    Ok((index, count))
}

/// The analysis options as they change the output (a shard's `options`).
fn options_text(a: &AnalyzeArgs) -> String {
    let rollout = if a.rollout {
        format!(
            "trials={} plies={} candidates={} seed={}",
            a.rollout_trials, a.rollout_plies, a.rollout_candidates, a.seed
        )
    } else {
        "none".to_string()
    };
    format!(
        "plies={} luck_plies={} thresholds={:?} rollout={rollout} json={}",
        a.plies, a.luck_plies, a.thresholds, a.json
    )
}

/// FNV-1a 64 of the record names, each followed by a newline, as 16 hex digits.
fn list_hash(names: &[String]) -> String {
    let mut all = Vec::new();
    for n in names {
        all.extend_from_slice(n.as_bytes());
        all.push(b'\n');
    }
    format!("{:016x}", fnv1a64(&all))
}

/// The records of `a` analysed (all, or the shard's), as the output or a shard file,
/// and the shard (`INDEX`, `COUNT`).
fn analyse_all(
    a: &AnalyzeArgs,
    service: impl FnOnce() -> TavliEngineService,
) -> Result<(String, Option<(u32, u32)>), BoxError> {
    let records = files(&a.records)?;
    let total = records.len();
    if a.svg.is_some() && total > 1 {
        return Err("--svg takes one record".into());
    }
    let shard = match &a.shard {
        Some(spec) => Some(parse_shard(
            spec,
            std::env::var(SHARD_INDEX_ENV).ok().as_deref(),
        )?),
        None => None,
    };
    if shard.is_some() && records.iter().any(|r| r == "-") {
        return Err("--shard needs record files, not `-`".into());
    }
    let mine: Vec<usize> = match shard {
        Some((i, n)) => (i as usize..total).step_by(n as usize).collect(),
        None => (0..total).collect(),
    };
    let service = service();
    let bar = progress(
        total > 1,
        mine.len() as u64,
        "{spinner} analysing record {pos}/{len} [{bar:30}] {elapsed} / ~{duration}  {msg}",
    );
    let mut out = String::new();
    if let Some((i, n)) = shard {
        let header = json!({
            "tavli_analyze_shard": SHARD_FORMAT,
            "shard": i,
            "count": n,
            "records": total,
            "list": list_hash(&records),
            "options": options_text(a),
        });
        out.push_str(&header.to_string());
        out.push('\n');
    }
    for &k in &mine {
        bar.set_message(records[k].clone());
        let messages = analyse_one(a, &records[k], &service, total == 1)?;
        let section = section(k, total, &records[k], &messages, a);
        match shard {
            Some(_) => {
                out.push_str(
                    &json!({"record": k, "name": records[k], "output": section}).to_string(),
                );
                out.push('\n');
            }
            None => out.push_str(&section),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok((out, shard))
}

/// The output of record `k` of `total`, named `name` (module documentation).
fn section(
    k: usize,
    total: usize,
    name: &str,
    messages: &[pb::AnalyzeGameResponse],
    a: &AnalyzeArgs,
) -> String {
    let pretty = |v: &Value| serde_json::to_string_pretty(v).expect("JSON");
    let as_json = |m: &pb::AnalyzeGameResponse| json::to_json(m, "tavli.v1.AnalyzeGameResponse");
    if total == 1 {
        if a.json {
            return messages
                .iter()
                .map(|m| pretty(&as_json(m)) + "\n")
                .collect();
        }
        return text_report(messages, a.plies, a.luck_plies);
    }
    if a.json {
        let v =
            json!({"record": name, "messages": messages.iter().map(as_json).collect::<Vec<_>>()});
        return pretty(&v) + "\n";
    }
    let gap = if k == 0 { "" } else { "\n" };
    format!(
        "{gap}==> {name} <==\n{}",
        text_report(messages, a.plies, a.luck_plies)
    )
}

/// Prints the shard files' sections in record order (module documentation). Errors:
/// a file that is not a shard file; shards of different runs; a shard or a record
/// missing or twice.
fn merge_shards(paths: &[String]) -> Result<String, BoxError> {
    let mut header: Option<(Value, String)> = None;
    let mut shards_seen: Vec<bool> = Vec::new();
    let mut sections: Vec<Option<(String, String)>> = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        let mut lines = text.lines();
        let bad = |what: &str| {
            format!("{path}: not a shard file of `tavli-engine analyze --shard` ({what})")
        };
        let h: Value = serde_json::from_str(lines.next().ok_or_else(|| bad("empty"))?)
            .map_err(|e| bad(&e.to_string()))?;
        if h["tavli_analyze_shard"].as_u64() != Some(SHARD_FORMAT) {
            return Err(bad("no header").into());
        }
        let (i, n, total) = (
            h["shard"].as_u64(),
            h["count"].as_u64(),
            h["records"].as_u64(),
        );
        let (Some(i), Some(n), Some(total)) = (i, n, total) else {
            return Err(bad("header without shard, count or records").into());
        };
        let run = |h: &Value| json!([h["count"], h["records"], h["list"], h["options"]]);
        match &header {
            None => {
                header = Some((run(&h), path.clone()));
                shards_seen = vec![false; n as usize];
                sections = vec![None; total as usize];
            }
            Some((want, first)) if *want != run(&h) => {
                return Err(format!("{path}: a shard of another run than {first} (count, records, record list or options differ)").into());
            }
            Some(_) => {}
        }
        if i >= n {
            return Err(bad("shard index not below count").into());
        }
        if std::mem::replace(&mut shards_seen[i as usize], true) {
            return Err(format!("{path}: shard {i}/{n} given twice").into());
        }
        for line in lines.filter(|l| !l.is_empty()) {
            let r: Value = serde_json::from_str(line).map_err(|e| bad(&e.to_string()))?;
            let (Some(k), Some(name), Some(output)) = (
                r["record"].as_u64(),
                r["name"].as_str(),
                r["output"].as_str(),
            ) else {
                return Err(bad("a record line without record, name or output").into());
            };
            if k >= total || k % n != i {
                return Err(format!(
                    "{path}: record {k} does not belong to shard {i}/{n} of {total} records"
                )
                .into());
            }
            if sections[k as usize]
                .replace((name.to_string(), output.to_string()))
                .is_some()
            {
                return Err(format!("{path}: record {k} twice").into());
            }
        }
    }
    let Some((h, _)) = header else {
        return Err("--merge: no shard files".into());
    };
    if let Some(i) = shards_seen.iter().position(|s| !s) {
        return Err(format!("--merge: shard {i}/{} is missing", shards_seen.len()).into());
    }
    let mut names = Vec::with_capacity(sections.len());
    let mut out = String::new();
    for (k, s) in sections.into_iter().enumerate() {
        let (name, output) = s.ok_or_else(|| {
            format!(
                "--merge: record {k} is missing from its shard {}",
                k % shards_seen.len()
            )
        })?;
        names.push(name);
        out.push_str(&output);
    }
    if Value::String(list_hash(&names)) != h[2] {
        return Err("--merge: the record names do not match the shards' record list".into());
    }
    Ok(out)
}

/// A progress bar of `len` steps on stderr when `show` and stderr is a terminal
/// (hidden otherwise), drawn by `template`.
fn progress(show: bool, len: u64, template: &str) -> indicatif::ProgressBar {
    if !show || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(len);
    b.set_style(
        indicatif::ProgressStyle::with_template(template)
            .expect("template")
            .progress_chars("=> "),
    );
    b
}

/// Analyses one record (`-`: standard input) and returns the stream's messages; with
/// `--svg`, writes the pictures. `bar`: a progress bar of its turns on stderr.
fn analyse_one(
    a: &AnalyzeArgs,
    record: &str,
    service: &TavliEngineService,
    bar: bool,
) -> Result<Vec<pb::AnalyzeGameResponse>, BoxError> {
    let text = if record == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(record).map_err(|e| format!("{record}: {e}"))?
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
        rollout: a.rollout.then_some(pb::AnalysisRollout {
            plies: a.rollout_plies,
            trials: a.rollout_trials,
            seed: a.seed,
            candidates: a.rollout_candidates,
        }),
    };
    let prepared = service.prepare_analysis(&req).map_err(|e| {
        if record == "-" {
            e.to_string()
        } else {
            format!("{record}: {e}")
        }
    })?;
    let turns = prepared.record.turn_count() as u64;
    let bar = progress(
        bar,
        turns,
        "{spinner} analysing {pos}/{len} turns [{bar:30}] {elapsed} / ~{duration}",
    );
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
    Ok(messages)
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
                if r.error_measure != "equity" {
                    let _ = writeln!(
                        out,
                        "errors and luck in {} (match winning chances at each game's score)",
                        r.error_measure.replace('_', " ")
                    );
                }
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
                if let Some(r) = &t.rollout {
                    let _ = writeln!(
                        out,
                        "{:>9} rollout of {} plays, {} trials at {} ply: error {:.3} \
                         (s.e. of the equities {:.3} / {:.3}); the search said {:.3} {}{}",
                        "",
                        r.candidates,
                        r.trials,
                        r.plies,
                        t.error,
                        r.played_equity_standard_error,
                        r.best_equity_standard_error,
                        r.search_error,
                        mark_symbol(r.search_mark),
                        if r.search_best_play == t.best_play {
                            String::new()
                        } else {
                            format!(", best {}", r.search_best_play)
                        }
                    );
                }
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
