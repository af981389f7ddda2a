//! What a user meets on a first run: a broker port that another campaign holds, errors in one
//! line, and a log of ccfuzz's own lines without LibAFL's internals.

mod common;

use common::*;
use std::net::{Ipv4Addr, TcpListener};

/// What the OS says when a port is taken, as ccfuzz quotes it.
fn address_in_use() -> String {
    std::io::Error::from_raw_os_error(libc::EADDRINUSE).to_string()
}

/// Holds the default broker port for the test's length (or leaves it to whoever holds it now).
fn hold_default_port() -> Option<TcpListener> {
    TcpListener::bind((Ipv4Addr::UNSPECIFIED, ccfuzz::campaign::broker::DEFAULT_PORT)).ok()
}

/// The error lines ccfuzz printed (log lines start with `[`).
fn error_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.starts_with("ccfuzz: ")).collect()
}

#[test]
fn a_taken_port_given_with_broker_port_fails_in_one_line_that_names_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &["gcc -O0"], 60.0);
    let held = TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    let port = held.local_addr().unwrap().port();
    let output = fuzz(&dir.path().join("out"), &config)
        .args(["--cores", "0", "--broker-port", &port.to_string(), "--seeds"])
        .arg(seeds("dead"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert_eq!(
        error_lines(&stderr),
        [format!(
            "ccfuzz: cannot listen on port {port} given by --broker-port: {}",
            address_in_use()
        )],
        "{stderr}"
    );
    assert_eq!(stderr.matches("os error").count(), 1, "{stderr}");
}

#[test]
fn without_broker_port_a_campaign_beside_another_takes_a_free_port_and_says_which() {
    let _held = hold_default_port();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &["gcc -O0"], 60.0);
    let no_seeds = dir.path().join("no-seeds");
    std::fs::create_dir(&no_seeds).unwrap();
    let output = fuzz(&dir.path().join("out"), &config)
        .args(["--cores", "0", "--seeds"])
        .arg(&no_seeds)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let taken = stderr
        .lines()
        .find(|l| l.contains("port 1337 is taken"))
        .unwrap_or_else(|| panic!("{stderr}"));
    let port: u16 = taken
        .split("listens on port ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{taken}"));
    assert_ne!(port, 1337, "{taken}");
    assert!(taken.ends_with("(--broker-port sets it)"), "{taken}");
    // The campaign goes on (and stops here only because the directory has no seed).
    assert_eq!(
        error_lines(&stderr),
        [format!(
            "ccfuzz: no seed of {} was accepted: nothing to fuzz",
            no_seeds.display()
        )],
        "{stderr}"
    );
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn the_default_log_shows_seeds_status_and_findings_without_libafl_internals() {
    let _held = hold_default_port();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["gcc -O0 -funsigned-char"], 60.0);
    let output = fuzz(&out, &config)
        .env_remove("RUST_LOG")
        .args(["--cores", "0", "--iterations", "6", "--status-interval", "1", "--seeds"])
        .arg(seeds("char"))
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    // A campaign beside another one runs on a port of its own.
    assert!(log.contains("port 1337 is taken"), "{log}");
    assert!(log.contains("seeds: 2 accepted, 0 rejected"), "{log}");
    // The status line; the finding is in the closing line (the campaign may end before the
    // status line shows it).
    assert!(log.contains(" execs ("), "{log}");
    assert!(log.contains(" 1 findings in "), "{log}");
    assert_eq!(findings(&out).len(), 1, "{log}");
    // env_logger's lines: `[TIME LEVEL TARGET] message`.
    let other_crates_info: Vec<&str> = log
        .lines()
        .filter(|l| {
            let mut head = l.strip_prefix('[').unwrap_or("").split_whitespace().skip(1);
            let (level, target) = (head.next().unwrap_or(""), head.next().unwrap_or("ccfuzz"));
            matches!(level, "INFO" | "DEBUG" | "TRACE") && !target.starts_with("ccfuzz")
        })
        .collect();
    assert!(other_crates_info.is_empty(), "{other_crates_info:#?}");
    for internal in ["PostFork", "Spawning next client", "First run. Let's set it all up"] {
        assert!(!log.contains(internal), "{internal}:\n{log}");
    }
}
