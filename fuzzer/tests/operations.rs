//! Operating a long campaign: Ctrl-C stops it cleanly (reports and chains saved, scratch
//! removed, exit status 0) and a restart resumes it; the scratch directory does not grow with
//! the number of executions.

mod common;

use common::*;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// MCMC decisions client 1 logged so far: one line per executed proposal.
fn decisions(out: &Path) -> usize {
    std::fs::read_to_string(out.join("mcmc/client-1.csv"))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

/// Files and directories under `dir`, recursively (0 when it does not exist).
fn entries_under(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok())
        .map(|entry| 1 + entries_under(&entry.path()))
        .sum()
}

/// A campaign on one core in its own process group, as a shell starts a job, its stdout in
/// `log`.
fn start(out: &Path, config: &Path, log: &Path, extra: &[&str]) -> Child {
    fuzz_on_one_core(out, config)
        .args(extra)
        .stdout(std::fs::File::create(log).unwrap())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// Waits for the campaign to exit; one that hangs is killed and fails the test.
fn wait_for_exit(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            panic!("the campaign did not stop");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn proposals_in_chains_file(out: &Path) -> u64 {
    let chains: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("mcmc/chains-client-1.json")).unwrap()).unwrap();
    chains
        .as_object()
        .unwrap()
        .values()
        .map(|chain| chain["proposals"].as_u64().unwrap())
        .sum()
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn ctrl_c_stops_cleanly_and_the_campaign_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["tcc"], 60.0);
    let seeds = seeds("dead");
    let log = dir.path().join("log");
    // Scratch outside the output directory, as on /dev/shm: one directory, held by a lock.
    let scratch_root = dir.path().join("scratch");
    let scratch_dirs = || match std::fs::read_dir(&scratch_root) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    };
    let scratch = ["--scratch", scratch_root.to_str().unwrap()];
    let mut child = start(
        &out,
        &config,
        &log,
        &[&["--seeds", seeds.to_str().unwrap()][..], &scratch].concat(),
    );
    let start_time = Instant::now();
    while decisions(&out) < 30 {
        assert!(
            start_time.elapsed() < Duration::from_secs(120),
            "the campaign made no progress"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let held: Vec<std::path::PathBuf> = scratch_dirs();
    assert_eq!(held.len(), 1, "{held:?}");
    assert!(held[0].join(".owner-lock").exists() && held[0].join("client-1").is_dir());
    assert!(!out.join("tmp").exists());
    // What a terminal does on Ctrl-C: SIGINT to every process of the foreground job.
    killpg(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = wait_for_exit(&mut child, Duration::from_secs(60));
    let printed = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{status:?}\n{printed}");
    assert!(printed.contains("campaign stopped on request after"), "{printed}");
    assert!(
        !held[0].exists(),
        "the scratch is left: {} entries",
        entries_under(&held[0])
    );

    // The report and the chains were written when the client stopped, from the same state.
    let report = client_report(&out);
    assert!(report.executions >= 30, "{report:?}");
    assert_eq!(proposals_in_chains_file(&out), report.mcmc.proposals);

    // What is on disk comes back: the seed, the chain's state and the states it reads through
    // (those it left were deleted).
    let saved = std::fs::read_dir(out.join("corpus"))
        .unwrap()
        .filter(|e| !e.as_ref().unwrap().file_name().to_string_lossy().starts_with('.'))
        .count();
    assert!(saved < report.mcmc.accepted as usize, "{saved} files, {report:?}");
    let log = campaign(
        &out,
        &config,
        &[&["--seeds", seeds.to_str().unwrap(), "--iterations", "5"][..], &scratch].concat(),
    );
    assert!(log.contains(&format!("resumed with {saved} corpus entries")), "{log}");
    assert!(scratch_dirs().is_empty(), "{:?}", scratch_dirs());
    assert!(log.contains("chains continue where they stopped"), "{log}");
    let proposals = proposals_in_chains_file(&out);
    assert!(
        proposals > report.mcmc.proposals,
        "{proposals} proposals after the resumed run, {} before\n{log}",
        report.mcmc.proposals
    );
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn files_a_compiler_leaves_in_its_directory_are_cleared_every_few_executions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // tcc, leaving a file of its own in its working directory (the executor's) at every run.
    let leaving = dir.path().join("leaving-tcc");
    std::fs::write(&leaving, "#!/bin/sh\ntouch \"left-$$\"\nexec tcc \"$@\"\n").unwrap();
    std::fs::set_permissions(&leaving, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = write_config(dir.path(), &[leaving.to_str().unwrap()], 60.0);
    let log = dir.path().join("log");
    let seeds = seeds("dead");
    let mut campaign = start(
        &out,
        &config,
        &log,
        &[
            "--seeds",
            seeds.to_str().unwrap(),
            "--iterations",
            "120",
            "--scratch-on-disk",
        ],
    );
    let left_now = || {
        std::fs::read_dir(out.join("tmp/client-1/exec"))
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.ok())
            .filter(|entry| entry.file_name().to_string_lossy().starts_with("left-"))
            .count()
    };
    let mut most = 0;
    let start_time = Instant::now();
    while campaign.try_wait().unwrap().is_none() {
        most = most.max(left_now());
        // A guard against a hang, not a measure of speed.
        if start_time.elapsed() > Duration::from_secs(300) {
            let _ = killpg(Pid::from_raw(campaign.id() as i32), Signal::SIGKILL);
            panic!("the campaign did not finish in 300 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        campaign.wait().unwrap().success(),
        "{}",
        std::fs::read_to_string(&log).unwrap()
    );
    assert!(decisions(&out) >= 100, "too few executions to tell");
    // Not emptied before every execution, but every 16 at the least.
    assert!(
        (2..=16).contains(&most),
        "the executor's directory held {most} files left by the compiler"
    );
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn scratch_does_not_grow_with_executions() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["tcc"], 60.0);
    let log = dir.path().join("log");
    // csmith seeds: every 25 executions a seed is generated, profiled and vetted in tmp/ too.
    // Six seeds take most of the run's time (sanitizer builds, profiles under every family).
    let mut campaign = {
        let mut command = fuzz_on_one_core(&out, &config);
        command
            .current_dir(dir.path())
            .args([
                "--variants-per-seed",
                "25",
                "--iterations",
                "150",
                "--max-seed-share",
                "1",
                "--scratch-on-disk",
            ])
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::null())
            .process_group(0);
        command.spawn().unwrap()
    };
    // The most entries tmp/ held, in the first and in the second half of the run.
    let (mut early, mut late) = (0, 0);
    let start_time = Instant::now();
    while campaign.try_wait().unwrap().is_none() {
        let executed = decisions(&out);
        let entries = entries_under(&out.join("tmp"));
        if executed < 75 {
            early = early.max(entries);
        } else {
            late = late.max(entries);
        }
        // A guard against a hang, not a measure of speed: CI's cores are shared with another test.
        if start_time.elapsed() > Duration::from_secs(420) {
            let _ = killpg(Pid::from_raw(campaign.id() as i32), Signal::SIGKILL);
            panic!("the campaign did not finish in 420 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = campaign.wait().unwrap();
    assert!(status.success(), "{}", std::fs::read_to_string(&log).unwrap());
    assert!(decisions(&out) >= 100, "too few executions to tell");
    // One client's scratch: at most one execution's and one seed's files.
    assert!(early > 0 && early <= 40, "tmp/ held {early} entries early on");
    assert!(late <= 40, "tmp/ held {late} entries late in the run (early: {early})");
    assert!(!out.join("tmp").exists());
    // csmith runs inside the scratch directory, not in the campaign's working directory.
    assert!(!dir.path().join("platform.info").exists());

    // Six seeds through a rotation of four: the retired chains' entries left the client's
    // memory, and their seeds' files stayed.
    let report = client_report(&out);
    assert!(report.mcmc.forgotten_entries > 0, "{report:?}");
    let files = std::fs::read_dir(out.join("corpus"))
        .unwrap()
        .filter(|e| !e.as_ref().unwrap().file_name().to_string_lossy().starts_with('.'))
        .count();
    assert!(
        files > report.corpus,
        "{files} files for {} entries in memory",
        report.corpus
    );
    // The retired seeds' texts are gzipped, those in the rotation plain; all still load.
    let seed_dirs: Vec<PathBuf> = std::fs::read_dir(out.join("seeds"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("profile.json").is_file())
        .collect();
    let gzipped = seed_dirs.iter().filter(|p| p.join("seed.c.gz").is_file()).count();
    let plain = seed_dirs.iter().filter(|p| p.join("seed.c").is_file()).count();
    assert_eq!(
        (gzipped, plain),
        (report.mcmc.chains.saturating_sub(4) as usize, seed_dirs.len() - gzipped),
        "{} chains",
        report.mcmc.chains
    );
    let store = ccfuzz_mutators::seed::SeedStore::open(out.join("seeds")).unwrap();
    for id in store.ids().unwrap() {
        store.load(&id).unwrap();
    }
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn with_a_fast_compiler_seed_making_keeps_to_its_share_of_the_time() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["tcc"], 60.0);
    // A csmith seed takes seconds to make and a tcc variant a fraction of one: at the default
    // share of a quarter, each seed keeps being mutated well past its 2 variants (20 seeds
    // without the share; on a loaded machine variants slow down more than seed making).
    let log = campaign(&out, &config, &["--variants-per-seed", "2", "--iterations", "40"]);
    let report = client_report(&out);
    assert!(report.executions >= 40, "{log}");
    assert!(
        report.mcmc.chains <= 10,
        "{} seeds for {} executions at 2 variants per seed\n{log}",
        report.mcmc.chains,
        report.executions
    );
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn the_deadline_stops_a_client_that_is_waiting_for_a_compiler() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // A compiler under test that never finishes: the first seed's valuation run under it
    // blocks the client in seed making, long past the campaign's --seconds and up to the
    // compile timeout, unless the deadline interrupts it.
    let stuck = dir.path().join("stuck-cc");
    std::fs::write(&stuck, "#!/bin/sh\nexec sleep 600\n").unwrap();
    std::fs::set_permissions(&stuck, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = write_config(dir.path(), &[stuck.to_str().unwrap()], 300.0);
    let log = dir.path().join("log");
    let mut child = start(&out, &config, &log, &["--seconds", "15"]);
    // The deadline, then the client's and the broker's shutdown; the compile timeout is 300 s.
    let status = wait_for_exit(&mut child, Duration::from_secs(120));
    let printed = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{status:?}\n{printed}");
    assert!(printed.contains("campaign finished after"), "{printed}");
}
