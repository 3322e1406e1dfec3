//! `tavli-engine analyze` from the command line: the rollout options
//! (`--rollout-trials`, `--rollout-plies`, `--rollout-candidates`, `--seed`) need
//! `--rollout`; without it they were silently ignored (the plays not rolled out).

use std::process::Command;

/// A one-turn Portes record whose play (8/5 8/7 with 3-1) is marked very bad.
const BLUNDER: &str =
    " 1 point match\n\n Game 1 Portes opening 4-2\n alice : 0      bob : 0\n  1) 31: 8/5 8/7\n";

fn analyze(args: &[&str]) -> std::process::Output {
    let dir = std::env::temp_dir().join(format!("tavli-cli-analyze-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let record = dir.join("blunder.mat");
    std::fs::write(&record, BLUNDER).unwrap();
    Command::new(env!("CARGO_BIN_EXE_tavli-engine"))
        .arg("analyze")
        .arg(&record)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn rollout_options_need_rollout() {
    for flag in [
        "--rollout-trials=72",
        "--rollout-plies=1",
        "--rollout-candidates=2",
        "--seed=5",
    ] {
        let out = analyze(&[flag]);
        assert_eq!(out.status.code(), Some(2), "{flag}: {out:?}");
        assert!(out.stdout.is_empty(), "{flag}: {out:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        let head: Vec<&str> = err.lines().take(2).collect();
        assert_eq!(
            head,
            [
                "error: the following required arguments were not provided:",
                "  --rollout"
            ],
            "{flag}: {err}"
        );
    }
}

#[test]
fn rollout_options_with_rollout_roll_out() {
    let out = analyze(&["--rollout", "--rollout-trials=36", "--rollout-candidates=1"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("rollout of "))
        .unwrap_or_else(|| panic!("no rollout line in:\n{text}"));
    // The play made and the best play: two plays, 36 trials each, at 0 ply (the
    // figures after it depend on the committed weights).
    assert!(
        line.trim_start()
            .starts_with("rollout of 2 plays, 36 trials at 0 ply: error "),
        "{line}"
    );
}
