//! A campaign killed with SIGKILL and started again on its directory keeps every finding and
//! every corpus entry, goes on from them, and removes the shared memory the killed run left.

mod common;

use ccfuzz_mutators::input::Variant;
use common::*;
use libafl::inputs::Input;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// Shared-memory segments nobody has attached whose creator is dead: the leftovers of a kill,
/// as segment ids by their creators' pids.
fn orphan_segments() -> BTreeSet<(i64, i64)> {
    let table = std::fs::read_to_string("/proc/sysvipc/shm").unwrap();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<i64> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
            let (id, creator, attached) = (f[1], f[4], f[6]);
            // A zombie has released its memory: it counts as dead.
            let dead = std::fs::read_to_string(format!("/proc/{creator}/stat")).map_or(true, |stat| {
                stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z'))
            });
            (attached == 0 && dead).then_some((id, creator))
        })
        .collect()
}

/// The processes of process group `group`: whatever another test kills meanwhile is not ours.
fn group_members(group: i32) -> BTreeSet<i64> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i64>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                // After the command: state, parent, then the process group.
                stat.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.split_whitespace().nth(2)?.parse::<i32>().ok())
                    == Some(group)
            })
        })
        .collect()
}

fn corpus_entries(out: &Path) -> BTreeSet<String> {
    std::fs::read_dir(out.join("corpus"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn sigkill_then_resume_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["gcc -O0 -funsigned-char"], 60.0);
    let seeds = seeds("char");
    let mut child = fuzz_on_one_core(&out, &config)
        .arg("--seeds")
        .arg(&seeds)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let group = Pid::from_raw(child.id() as i32);
    let start = Instant::now();
    // Wait until both seeds are in the corpus and the mismatch is saved, and a few variants ran.
    // Variants of the -funsigned-char seed are findings too, and chain states reach the disk
    // when the chains file names them: by then there may be several.
    while corpus_entries(&out).len() < 2 || findings(&out).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the campaign made no progress: corpus {:?}, findings {:?}, client report {}",
            corpus_entries(&out),
            findings(&out),
            std::fs::read_to_string(out.join("clients").join("client-1.json")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    let orphans_before = orphan_segments();
    let members = group_members(group.as_raw());
    killpg(group, Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    // The other processes of the group die a moment after the launcher.
    let killed = Instant::now();
    let left_behind: BTreeSet<(i64, i64)> = loop {
        let left: BTreeSet<(i64, i64)> = orphan_segments()
            .difference(&orphans_before)
            .filter(|(_, creator)| members.contains(creator))
            .copied()
            .collect();
        if !left.is_empty() || killed.elapsed() > Duration::from_secs(30) {
            break left;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(!left_behind.is_empty(), "a killed campaign leaves its shared memory");
    let corpus_before = corpus_entries(&out);
    let findings_before = findings(&out);

    let log = campaign(
        &out,
        &config,
        &["--seeds", seeds.to_str().unwrap(), "--iterations", "3"],
    );
    // An entry the kill interrupted while it was written is skipped on resume.
    let complete = corpus_before
        .iter()
        .filter(|name| Variant::from_file(out.join("corpus").join(name)).is_ok())
        .count();
    let resumed = format!("resumed with {complete} corpus entries");
    assert!(log.contains(&resumed), "{log}");
    let corpus_after = corpus_entries(&out);
    assert!(
        corpus_after.is_superset(&corpus_before),
        "{corpus_before:?} -> {corpus_after:?}"
    );
    assert!(
        log.contains("orphaned shared-memory segments made since the last run on this directory started"),
        "{log}"
    );
    let still_there: Vec<(i64, i64)> = orphan_segments().intersection(&left_behind).copied().collect();
    assert!(still_there.is_empty(), "left behind: {still_there:?}");
    // The resumed run may add findings of its own; it loses none.
    let findings_after = findings(&out);
    assert!(
        findings_before.iter().all(|f| findings_after.contains(f)),
        "{findings_before:?} -> {findings_after:?}"
    );
    for finding in findings_after {
        assert_reproduces(&finding);
    }
}
