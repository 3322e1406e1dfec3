//! `tavli-engine analyze` over many records, sharded the Kubernetes way (issue #34):
//! `--shard INDEX/COUNT` (INDEX from `JOB_COMPLETION_INDEX` with `/COUNT`) analyses
//! every COUNT-th record of the sorted list, and `--merge` of the COUNT shard files
//! prints byte for byte what the run without `--shard` prints, as text and as JSON.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tavli-engine"));
    c.env_remove("JOB_COMPLETION_INDEX");
    c
}

fn ok(out: Output) -> Vec<u8> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn err(out: Output) -> String {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    String::from_utf8(out.stderr).unwrap()
}

/// A fresh directory with the six test records (GNU Backgammon exports and the Tavli
/// match), and a file that is hidden (not a record).
fn records(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tavli-shard-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let recs = dir.join("records");
    std::fs::create_dir_all(&recs).unwrap();
    for src in ["tests/data/mat", "tests/data/tavli"] {
        for e in std::fs::read_dir(src).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "mat") {
                std::fs::copy(&p, recs.join(p.file_name().unwrap())).unwrap();
            }
        }
    }
    std::fs::write(recs.join(".notes"), "not a record").unwrap();
    dir
}

fn analyze(args: &[&str]) -> Command {
    let mut c = bin();
    c.arg("analyze").args(args);
    c
}

/// The shard files of COUNT shards of `args` in `out`, then their merge.
fn sharded(dir: &Path, args: &[&str], count: u32) -> Vec<u8> {
    let out = dir.join(format!("shards-{count}"));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    for i in 0..count {
        let file = out.join(format!("shard-{i}.jsonl"));
        let spec = format!("{i}/{count}");
        let o = analyze(args)
            .args(["--shard", &spec, "--output"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(ok(o).is_empty(), "--output takes the output");
    }
    ok(analyze(&["--merge"]).arg(&out).output().unwrap())
}

#[test]
fn merged_shards_are_the_unsharded_output_byte_for_byte() {
    let dir = records("merge");
    let recs = dir.join("records");
    let recs = recs.to_str().unwrap();
    for extra in [&[][..], &["--json"][..], &["--plies", "1"][..]] {
        let args: Vec<&str> = [recs].into_iter().chain(extra.iter().copied()).collect();
        let whole = ok(analyze(&args).output().unwrap());
        let text = String::from_utf8(whole.clone()).unwrap();
        if extra.is_empty() {
            // Six sections in file-name order, the hidden file left out.
            let heads: Vec<&str> = text.lines().filter(|l| l.starts_with("==> ")).collect();
            assert_eq!(heads.len(), 6, "{heads:?}");
            assert!(
                heads[0].ends_with("records/gnubg-3p-resign-after-double.mat <=="),
                "{heads:?}"
            );
            assert!(
                heads[5].ends_with("records/tavli-3p-match.mat <=="),
                "{heads:?}"
            );
            assert!(text.contains("\n\n==> "), "a blank line between sections");
        }
        for count in [1, 2, 3] {
            assert!(
                sharded(&dir, &args, count) == whole,
                "{extra:?}, {count} shards"
            );
        }
    }
}

#[test]
fn the_index_comes_from_job_completion_index() {
    let dir = records("env");
    let recs = dir.join("records");
    let recs = recs.to_str().unwrap();
    let explicit = ok(analyze(&[recs, "--shard", "2/3"]).output().unwrap());
    let from_env = ok(analyze(&[recs, "--shard", "/3"])
        .env("JOB_COMPLETION_INDEX", "2")
        .output()
        .unwrap());
    assert_eq!(explicit, from_env);
    // Into a directory (created): shard-INDEX-of-COUNT.jsonl.
    let out = dir.join("out");
    let o = analyze(&[recs, "--shard", "/3", "--output"])
        .arg(format!("{}/", out.display()))
        .env("JOB_COMPLETION_INDEX", "2")
        .output()
        .unwrap();
    assert!(ok(o).is_empty());
    assert_eq!(
        std::fs::read(out.join("shard-2-of-3.jsonl")).unwrap(),
        explicit
    );
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        1,
        "no file left beside"
    );
    let text = String::from_utf8(explicit).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // The header and records 2 and 5 (round-robin over the sorted list).
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("{\"count\":3,"), "{}", lines[0]);
    assert!(
        lines[0].contains("\"records\":6,\"shard\":2,\"tavli_analyze_shard\":1"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("{\"name\":") && lines[1].contains("gnubg-3p-roll-resign-right.mat")
    );
    assert!(lines[1].ends_with("\"record\":2}"), "{}", lines[1]);
    assert!(lines[2].ends_with("\"record\":5}"), "{}", lines[2]);
    // A shard beyond the records has only its header.
    let empty = ok(analyze(&[recs, "--shard", "7/9"]).output().unwrap());
    assert_eq!(String::from_utf8(empty).unwrap().lines().count(), 1);
}

#[test]
fn one_record_prints_as_before_and_bad_shards_are_refused() {
    let dir = records("bad");
    let recs = dir.join("records");
    let one = recs.join("gnubg-7p-cube.mat");
    let text = String::from_utf8(ok(analyze(&[one.to_str().unwrap()]).output().unwrap())).unwrap();
    assert!(text.starts_with("3 games, 122 turns, match to 7"), "{text}");
    assert!(!text.contains("==>"));
    let recs = recs.to_str().unwrap();
    for (spec, want) in [
        ("3", "give INDEX/COUNT"),
        ("3/3", "INDEX must be below COUNT"),
        ("0/0", "INDEX must be below COUNT"),
        ("/3", "$JOB_COMPLETION_INDEX is not set"),
        ("x/3", "give INDEX/COUNT"),
    ] {
        let e = err(analyze(&[recs, "--shard", spec]).output().unwrap());
        assert!(e.contains(want), "{spec}: {e}");
    }
    let e = err(analyze(&[recs, "--shard", "/3"])
        .env("JOB_COMPLETION_INDEX", "abc")
        .output()
        .unwrap());
    assert!(
        e.contains("JOB_COMPLETION_INDEX=\"abc\" is not a shard index"),
        "{e}"
    );
    // Shards of another run, a missing shard, a shard twice, not a shard file.
    let out = dir.join("mixed");
    std::fs::create_dir_all(&out).unwrap();
    let shard = |name: &str, args: &[&str]| {
        let f = out.join(name);
        ok(analyze(&[recs])
            .args(args)
            .arg("--output")
            .arg(&f)
            .output()
            .unwrap());
        f
    };
    let s0 = shard("a0", &["--shard", "0/2"]);
    let s1_json = shard("a1", &["--shard", "1/2", "--json"]);
    let e = err(analyze(&["--merge"])
        .arg(&s0)
        .arg(&s1_json)
        .output()
        .unwrap());
    assert!(e.contains("a shard of another run"), "{e}");
    let e = err(analyze(&["--merge"]).arg(&s0).output().unwrap());
    assert!(e.contains("shard 1/2 is missing"), "{e}");
    let e = err(analyze(&["--merge"]).arg(&s0).arg(&s0).output().unwrap());
    assert!(e.contains("shard 0/2 given twice"), "{e}");
    let e = err(analyze(&["--merge"]).arg(&one).output().unwrap());
    assert!(e.contains("not a shard file"), "{e}");
    let e = err(analyze(&[recs, "--svg", "/tmp/x.svg"]).output().unwrap());
    assert!(e.contains("--svg takes one record"), "{e}");
}
