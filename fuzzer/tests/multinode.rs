//! Two campaigns joined broker to broker over loopback (`--remote-broker`), as two machines
//! would be: a finding made on one node appears on the other, with the seed it needs, and
//! reproduces there.

mod common;

use common::*;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Stops a campaign's process group when the test ends, whatever happens: asked to stop first,
/// because a killed campaign leaves its shared-memory segments behind until the machine reboots
/// (nobody resumes a test's directory to remove them), and killed if it has not within 30 s.
struct Node(Child);

impl Drop for Node {
    fn drop(&mut self) {
        let group = Pid::from_raw(self.0.id() as i32);
        let _ = killpg(group, Signal::SIGINT);
        let asked = Instant::now();
        while matches!(self.0.try_wait(), Ok(None)) && asked.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = killpg(group, Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

fn node(out: &Path, config: &Path, seeds: &str, port: u16, remote: Option<u16>) -> Node {
    let mut command = fuzz(out, config);
    command.arg("--seeds").arg(common::seeds(seeds)).args([
        "--cores",
        "0",
        "--seconds",
        "240",
        "--broker-port",
        &port.to_string(),
    ]);
    if let Some(remote) = remote {
        command.args(["--remote-broker", &format!("127.0.0.1:{remote}")]);
    }
    let log = std::fs::File::create(out.with_extension("log")).unwrap();
    let child = command
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .process_group(0)
        .spawn()
        .unwrap();
    Node(child)
}

fn wait_for(what: &str, logs: &[&Path], mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > Duration::from_secs(200) {
            let logs: Vec<String> = logs
                .iter()
                .map(|l| std::fs::read_to_string(l).unwrap_or_default())
                .collect();
            panic!("timed out waiting for {what}; logs:\n{}", logs.join("\n-----\n"));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn seed_ids(out: &Path) -> Vec<String> {
    std::fs::read_dir(out.join("seeds"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.path().join("profile.json").is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn a_finding_on_one_node_appears_on_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &["gcc -O0 -funsigned-char"], 60.0);
    let (here, there) = (dir.path().join("here"), dir.path().join("there"));
    let (here_log, there_log) = (here.with_extension("log"), there.with_extension("log"));
    let logs = [here_log.as_path(), there_log.as_path()];

    // `there` listens; `here` links to it once a client of `there` holds a corpus entry (so its
    // broker is up), and nothing `here` finds can be sent before the link exists.
    let there_port = free_port();
    let _there = node(&there, &config, "dead", there_port, None);
    wait_for("the first node's corpus", &logs, || {
        std::fs::read_dir(there.join("corpus")).is_ok_and(|mut entries| entries.next().is_some())
    });
    let _here = node(&here, &config, "char", free_port(), Some(there_port));

    // `here` alone has the seed that -funsigned-char miscompiles against the reference.
    wait_for("a finding on the joining node", &logs, || !findings(&here).is_empty());
    let found_here = findings(&here);
    let seed = finding_json(&found_here[0])["seed"].as_str().unwrap().to_string();

    // The same finding, under the same name, with the seed stored on the other node. The other
    // node may also find a variant of that seed of its own first (it runs a chain on the seed
    // once it has it), and this node may find more: what is waited for is one of this node's.
    let arrived_from_here = || {
        let here_names: Vec<_> = findings(&here)
            .iter()
            .map(|f| f.file_name().map(|n| n.to_owned()))
            .collect();
        findings(&there).into_iter().find(|f| {
            finding_json(f)["seed"].as_str() == Some(seed.as_str())
                && here_names.contains(&f.file_name().map(|n| n.to_owned()))
        })
    };
    wait_for("this node's finding on the other node", &logs, || {
        arrived_from_here().is_some()
    });
    let arrived = arrived_from_here().unwrap();
    // The other node profiles only the "dead" seeds: it can have this one from `here` alone.
    assert!(
        seed_ids(&there).contains(&seed),
        "seed {seed} was not stored on the other node"
    );
    assert_eq!(
        std::fs::read(arrived.join("variant.c")).unwrap(),
        std::fs::read(
            found_here[0]
                .parent()
                .unwrap()
                .join(arrived.file_name().unwrap())
                .join("variant.c")
        )
        .unwrap()
    );
    assert_reproduces(&arrived);
}

#[test]
fn a_broker_that_cannot_be_reached_is_a_clear_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &["gcc -O0 -funsigned-char"], 60.0);
    let nobody = free_port();
    let output = fuzz_on_one_core(&dir.path().join("out"), &config)
        .arg("--seeds")
        .arg(common::seeds("dead"))
        .args(["--seconds", "60", "--remote-broker", &format!("127.0.0.1:{nobody}")])
        .output()
        .unwrap();
    let log = text(&output);
    assert!(!output.status.success(), "{log}");
    assert!(
        log.contains(&format!("cannot link to the broker at 127.0.0.1:{nobody}")),
        "{log}"
    );
}
