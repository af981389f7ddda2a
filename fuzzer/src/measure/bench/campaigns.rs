//! `ccfuzz bench --parts campaigns`: real campaigns of `--seconds` each. The fuzzer's own CPU
//! share against its children's with the configuration, with tcc and pcc, and with tcc alone
//! (fast compilers leave the harness nowhere to hide), each of the last two also with the
//! validity gate on disagreement; executions per second and scaling from
//! one core to two; how a client's resident memory and the output directory grow per hour, and
//! the corpus bytes per accepted chain state.

use super::{children_cpu, BenchOptions};
use crate::campaign::client_report::resident_bytes;
use crate::campaign::ClientReport;
use crate::config::{CompilerConfig, Config, ReferenceGate};
use crate::ops::usage::proc_stat;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// How often the clients' memory is sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(2);

/// What one campaign of the bench did.
struct CampaignFigures {
    rate: f64,
    own_share: f64,
    /// Largest client RSS (bytes) a quarter of the way in, and at the end.
    rss: (u64, u64),
    /// Bytes under the output directory at the end (scratch excluded).
    disk: u64,
    corpus_bytes: u64,
    accepted: u64,
}

pub fn campaigns(options: &BenchOptions, config_file: &Path) -> Result<()> {
    let seconds = options.seconds as f64;
    let hour = 3600.0 / seconds;
    let one = campaign(options, "configured", config_file, "0")?;
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    if cpus >= 2 {
        let two = campaign(options, "configured", config_file, "0-1")?;
        println!("scaling from 1 to 2 cores: {:.2}x", two.rate / one.rate.max(1e-9));
    }
    println!(
        "growth, configured, 1 core: client RSS {:.1} MB at {:.0} s, {:.1} MB at {:.0} s ({:+.1} MB/hour if it went on so, but a campaign's first half hour is its warm-up: tests/studies/memory_series.py follows a long one); output {:.1} MB ({:.0} MB/hour); corpus {:.0} bytes per accepted state ({} accepted)",
        one.rss.0 as f64 / 1e6,
        seconds / 4.0,
        one.rss.1 as f64 / 1e6,
        seconds,
        (one.rss.1 as f64 - one.rss.0 as f64) / 1e6 * hour * 4.0 / 3.0,
        one.disk as f64 / 1e6,
        one.disk as f64 / 1e6 * hour,
        one.corpus_bytes as f64 / one.accepted.max(1) as f64,
        one.accepted,
    );
    // The reference (gcc) is the slowest compiler of these campaigns: each also runs with the
    // validity gate on disagreement.
    let fast = [
        ("tcc+pcc", vec!["tcc", "pcc"], ReferenceGate::First),
        (
            "tcc+pcc-gate-on-disagreement",
            vec!["tcc", "pcc"],
            ReferenceGate::OnDisagreement,
        ),
        ("tcc", vec!["tcc"], ReferenceGate::First),
        ("tcc-gate-on-disagreement", vec!["tcc"], ReferenceGate::OnDisagreement),
    ];
    for (name, configurations, reference_gate) in fast {
        let config = Config {
            configurations: configurations.into_iter().map(CompilerConfig::new).collect(),
            reference_gate,
            ..options.config.clone()
        };
        let path = options.out.join(format!("configuration-{name}.toml"));
        std::fs::write(&path, config.to_toml())?;
        let figures = campaign(options, name, &path, "0")?;
        println!(
            "{name}, 1 core: {:.2} executions/s, fuzzer's own share {:.2}%",
            figures.rate,
            100.0 * figures.own_share
        );
    }
    Ok(())
}

/// Runs a campaign of `seconds` on `cores`, prints its executions per second and CPU split, and
/// samples its clients' memory.
fn campaign(options: &BenchOptions, name: &str, config_file: &Path, cores: &str) -> Result<CampaignFigures> {
    let out = options.out.join(format!("campaign-{name}-cores-{cores}"));
    let _ = std::fs::remove_dir_all(&out);
    let before = children_cpu()?;
    let fuzzer = match &options.fuzzer {
        Some(path) => path.clone(),
        None => std::env::current_exe()?,
    };
    let fuzzer_name = fuzzer
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut command = Command::new(fuzzer);
    command.args(["fuzz", "--cores", cores, "--seconds", &options.seconds.to_string()]);
    if let Some(random_seed) = options.random_seed {
        command.args(["--random-seed", &random_seed.to_string()]);
    }
    let mut child = command
        .arg("--out")
        .arg(&out)
        .arg("--config")
        .arg(config_file)
        .args(["--broker-port", &crate::campaign::broker::free_port()?.to_string()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .context("cannot start the campaign")?;
    let rss = sample_rss(&mut child, &fuzzer_name, options.seconds)?;
    let status = child.wait()?;
    if !status.success() {
        bail!("the {name} campaign on cores {cores} failed: {status}");
    }
    let total = children_cpu()? - before;
    let (mut executions, mut own, mut children, mut accepted) = (0, 0.0, 0.0, 0);
    let (mut seed_own, mut seed_children) = (0.0, 0.0);
    for entry in std::fs::read_dir(out.join("clients")).context("the campaign wrote no client report")? {
        let report: ClientReport = serde_json::from_slice(&std::fs::read(entry?.path())?)?;
        executions += report.executions;
        own += report.own_cpu;
        children += report.children_cpu;
        accepted += report.mcmc.accepted;
        seed_own += report.seed_making.own_cpu;
        seed_children += report.seed_making.children_cpu;
    }
    // The broker and the restarter processes are the rest of the tree.
    let other = (total - own - children).max(0.0);
    let rate = executions as f64 / options.seconds as f64;
    let share = |own: f64, children: f64| own / (own + children).max(1e-9);
    let own_share = share(own + other, children);
    println!(
        "{name}, cores {cores}: {executions} executions in {} s = {rate:.2} executions/s; CPU: fuzzer clients {own:.2} s (seed making {seed_own:.2} s), broker and restarters {other:.2} s, compilers/binaries/csmith {children:.2} s (seed making {seed_children:.2} s); fuzzer's own share {:.2}%: {:.2}% in executing variants (with the broker), {:.2}% in making seeds",
        options.seconds,
        100.0 * own_share,
        100.0 * share(own - seed_own + other, children - seed_children),
        100.0 * share(seed_own, seed_children),
    );
    Ok(CampaignFigures {
        rate,
        own_share,
        rss,
        disk: bytes_under(&out),
        corpus_bytes: bytes_under(&out.join("corpus")),
        accepted,
    })
}

/// The largest resident memory among the campaign's own processes, those of the program
/// `fuzzer` (its clients are the largest; a compiler the clients run is not one of them), a
/// quarter of the way in and at the end, sampled until `child` exits.
fn sample_rss(child: &mut Child, fuzzer: &str, seconds: u64) -> Result<(u64, u64)> {
    let start = Instant::now();
    let quarter = Duration::from_secs(seconds) / 4;
    let (mut at_quarter, mut last) = (None, 0);
    while child.try_wait()?.is_none() {
        std::thread::sleep(SAMPLE_EVERY);
        let largest = descendants(child.id())
            .into_iter()
            .filter(|(_, name)| is_named(name, fuzzer))
            .map(|(pid, _)| resident_bytes(&pid.to_string()))
            .max()
            .unwrap_or(0);
        // The clients' own exit shrinks the tree: keep the last full sample.
        if largest > 0 {
            last = largest;
        }
        if at_quarter.is_none() && start.elapsed() >= quarter && last > 0 {
            at_quarter = Some(last);
        }
    }
    Ok((at_quarter.unwrap_or(last), last))
}

/// Whether a process's command name (cut by the kernel to 15 bytes) is that of the program
/// `program`.
fn is_named(command_name: &str, program: &str) -> bool {
    command_name.as_bytes() == &program.as_bytes()[..program.len().min(15)]
}

/// The process and every process below it, from /proc, with their command names.
fn descendants(root: u32) -> Vec<(u32, String)> {
    let processes: Vec<(u32, u32, String)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let (name, fields) = proc_stat(&pid.to_string())?;
            let parent = fields.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, parent, name))
        })
        .collect();
    let name_of = |pid: u32| {
        processes
            .iter()
            .find(|(p, _, _)| *p == pid)
            .map_or_else(String::new, |(_, _, name)| name.clone())
    };
    let mut found = vec![(root, name_of(root))];
    let mut next = 0;
    while next < found.len() {
        let parent = found[next].0;
        found.extend(
            processes
                .iter()
                .filter(|(_, p, _)| *p == parent)
                .map(|(pid, _, name)| (*pid, name.clone())),
        );
        next += 1;
    }
    found
}

/// Bytes of the files under `dir` (apparent sizes; scratch included only while it exists).
fn bytes_under(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            match entry.metadata() {
                Ok(meta) if meta.is_dir() => pending.push(entry.path()),
                Ok(meta) => total += meta.len(),
                Err(_) => {}
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::{descendants, is_named};

    fn runs_program(pid: u32, program: &str) -> bool {
        descendants(pid)
            .first()
            .is_some_and(|(_, name)| is_named(name, program))
    }

    #[test]
    fn a_process_is_told_by_its_program_even_past_the_kernels_fifteen_bytes() {
        let own = std::env::current_exe().unwrap();
        let own_name = own.file_name().unwrap().to_str().unwrap();
        assert!(own_name.len() > 15, "{own_name}");
        assert!(runs_program(std::process::id(), own_name));
        let mut sleeper = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        // A spawn may return before the kernel names the child after its new program.
        let named = (0..500).any(|_| {
            runs_program(sleeper.id(), "sleep") || {
                std::thread::sleep(std::time::Duration::from_millis(10));
                false
            }
        });
        assert!(named);
        assert!(!runs_program(sleeper.id(), own_name));
        assert!(!runs_program(std::process::id(), "sleep"));
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
    }
}
