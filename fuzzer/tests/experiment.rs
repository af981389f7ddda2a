//! The experiments and plots end to end at a tiny scale: real campaigns of gcc-12 with its
//! statistics observed, counters classified, reports and charts written.

mod common;

use common::*;

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn counters_experiment_classifies_every_counter_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("configuration.toml");
    std::fs::write(
        &config,
        "reference = \"gcc -O0\"\nub_check = [\"clang -O0\"]\nconfigurations = [{ command = \"gcc-12 -O2\", counters = \"gcc\" }]\ncompile_timeout = 60.0\nseed_timeout = 5.0\nrun_timeout = 10.0\ncsmith_include = \"/usr/include/csmith\"\ncsmith_args = [\"--no-packed-struct\"]\n",
    )
    .unwrap();
    let out = dir.path().join("exp");
    let output = ccfuzz()
        .args([
            "experiment",
            "counters",
            "--a",
            "mutators=hermes",
            "--b",
            "mutators=orion",
        ])
        .arg("--config")
        .arg(&config)
        .arg("--seeds")
        .arg(seeds("dead"))
        .args(["--seconds", "12", "--repetitions", "2", "--cores", "0,1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    // A and B of a repetition ran side by side, each on its own core.
    assert!(log.contains("on core 0") && log.contains("on core 1"), "{log}");
    let csv = std::fs::read_to_string(out.join("counters.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    // gcc-12 -O2 reports well over a hundred statistics on any function.
    assert!(rows.len() > 50, "{csv}");
    let verdicts = ["A better", "B better", "comparable"];
    assert!(rows.iter().all(|r| verdicts.iter().any(|v| r.ends_with(v))), "{csv}");
    assert!(rows.iter().all(|r| r.starts_with("\"gcc-12 -O2 | ")), "{csv}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let total = format!("counters: {} in all", rows.len());
    assert!(report.contains(&total), "{report}");
    assert!(report.contains("geometric mean of A/B ratios"), "{report}");
    assert!(report.contains("at the same time on two cores"), "{report}");
    for file in ["verdicts.png", "verdicts.svg"] {
        assert_png_or_svg(&out.join(file));
    }
    // Every run kept its monitor's statistics over time: plot one.
    let plot = ccfuzz().arg("plot").arg(out.join("a-1")).output().unwrap();
    assert!(plot.status.success(), "{}", text(&plot));
    for file in ["campaign.png", "campaign.svg"] {
        assert_png_or_svg(&out.join("a-1/plots").join(file));
    }
}

fn assert_png_or_svg(path: &std::path::Path) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let ok = if path.extension().unwrap() == "png" {
        bytes.starts_with(b"\x89PNG") && bytes.len() > 5_000
    } else {
        String::from_utf8_lossy(&bytes).contains("<svg") && bytes.len() > 2_000
    };
    assert!(ok, "{} is not a drawn chart ({} bytes)", path.display(), bytes.len());
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn guidance_experiment_measures_coverage_counters_and_findings_of_both_setups() {
    let dir = tempfile::tempdir().unwrap();
    let tcc = built_tcc("tcc-afl");
    let config = write_edges_and_counters_config(dir.path(), &tcc);
    let out = dir.path().join("exp");
    let output = ccfuzz()
        .args(["experiment", "guidance", "--config"])
        .arg(&config)
        .arg("--seeds")
        .arg(seeds("dead"))
        .args(["--seconds", "10", "--repetitions", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    let csv = std::fs::read_to_string(out.join("guidance.csv")).unwrap();
    let runs: Vec<Vec<f64>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').skip(1).map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(runs.len(), 4, "{csv}");
    for run in &runs {
        // AFL tcc covers over a thousand edges on any program; gcc-12 -O1 sets dozens of counters.
        assert!(run[0] > 1_000.0 && run[1] > 30.0 && run[3] > 0.0, "{csv}");
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for row in [
        "| compiler coverage |",
        "| distinct counters |",
        "| findings |",
        "| executions |",
    ] {
        assert!(report.contains(row), "{report}");
    }
    assert_png_or_svg(&out.join("guidance.png"));
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn coverage_experiment_gains_lines_with_more_variants_per_seed() {
    let dir = tempfile::tempdir().unwrap();
    let tcc = built_tcc("tcc-gcov");
    let config = write_config(dir.path(), &["gcc -O1"], 60.0);
    let out = dir.path().join("exp");
    let output = ccfuzz()
        .args(["experiment", "coverage", "--compiler"])
        .arg(format!("{} -B{}", tcc.join("tcc").display(), tcc.display()))
        .arg("--config")
        .arg(&config)
        .arg("--seeds")
        .arg(seeds("dead"))
        .args(["--families", "orion,hermes", "--ks", "1,3", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    let csv = std::fs::read_to_string(out.join("coverage.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 5, "{csv}");
    let baseline: usize = rows[0][3].parse().unwrap();
    assert!(baseline > 1_000, "{csv}");
    for family in ["orion", "hermes"] {
        let of = |k: &str| {
            rows.iter()
                .find(|r| r[0] == family && r[1] == k)
                .unwrap_or_else(|| panic!("{csv}"))
        };
        let (one, three) = (of("1"), of("3"));
        assert_eq!((one[2], three[2]), ("1", "3"), "{csv}");
        let (l1, l3): (usize, usize) = (one[3].parse().unwrap(), three[3].parse().unwrap());
        // A file set's coverage contains its subsets'.
        assert!(baseline <= l1 && l1 <= l3, "{csv}");
    }
    assert_png_or_svg(&out.join("coverage.png"));
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn bug_rate_study_triages_every_run_and_reports_bugs_per_cpu_hour() {
    let dir = tempfile::tempdir().unwrap();
    // TinyCC 0.9.27's bounds checker misreads the tcc seeds: every run finds that bug.
    let config = write_config(dir.path(), &["tcc -b"], 60.0);
    let out = dir.path().join("study");
    let output = ccfuzz()
        .args([
            "experiment",
            "bugs",
            "--setup",
            "orion: mutators=orion",
            "--setup",
            "hermes: mutators=hermes",
        ])
        .args(["--reducer", "none", "--config"])
        .arg(&config)
        .arg("--seeds")
        .arg(seeds("tcc"))
        .args(["--seconds", "12", "--repetitions", "2", "--cores", "0", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    let csv = std::fs::read_to_string(out.join("bug-rate.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 4, "{csv}");
    for row in &rows {
        assert!(row[2].parse::<usize>().unwrap() >= 1, "raw findings: {csv}");
        assert_eq!(row[3], "1", "one distinct bug: {csv}");
    }
    // Each run was triaged in its own directory.
    for run in ["orion-1", "orion-2", "hermes-1", "hermes-2"] {
        assert!(out.join(run).join("triage/bugs/bugs.json").is_file(), "{run}");
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| orion (`mutators=orion`) |"), "{report}");
    assert!(report.contains("| hermes (`mutators=hermes`) |"), "{report}");
    assert!(
        report.contains("- orion: tcc -b | wrong exit status: exit status 255"),
        "{report}"
    );
}
