//! The campaign's MCMC on a real compiler: every proposal is compiled and judged, accepted
//! proposals become the chain's state and enter the corpus, rejected ones do not, and the
//! decisions are logged with the chain's length and distance.

mod common;

use ccfuzz_mutators::edit::Edit;
use ccfuzz_mutators::input::{Variant, CHECKPOINT};
use common::*;
use libafl::inputs::Input;

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn athena_chains_accept_some_proposals_and_keep_the_accepted_ones() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["tcc"], 60.0);
    // A campaign of Athena on the dead-code seed, `iterations` long, writing into `out`.
    let athena_on_dead_code = |iterations: &str| {
        campaign(
            &out,
            &config,
            &[
                "--seeds",
                seeds("dead").to_str().unwrap(),
                "--mutators",
                "athena",
                "--iterations",
                iterations,
            ],
        )
    };
    let log = athena_on_dead_code("80");
    assert!(log.contains("seeds: 1 accepted, 0 rejected"), "{log}");
    assert!(findings(&out).is_empty(), "tcc miscompiled the dead-code seed?\n{log}");

    let csv = std::fs::read_to_string(out.join("mcmc/client-1.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    let accepted = rows.iter().filter(|r| r[4] == "1").count();
    assert!(rows.len() >= 40, "{} decisions:\n{csv}", rows.len());
    assert!(
        accepted > 0 && accepted < rows.len(),
        "{accepted} of {} accepted",
        rows.len()
    );
    // The chain's length counts its accepted moves, and its distance is the accepted state's.
    let mut length = 0u64;
    let mut distance = "0.000000";
    let mut accepted_states = std::collections::BTreeSet::new();
    for row in &rows {
        if row[4] == "1" {
            length += 1;
            distance = row[8];
            accepted_states.insert(row[2].to_string());
        }
        assert_eq!(row[6].parse::<u64>().unwrap(), length, "{row:?}");
        assert_eq!(row[7], distance, "{row:?}");
    }

    let report = client_report(&out);
    assert_eq!(report.mcmc.accepted as usize, accepted);
    assert!(report.mcmc.acceptance_rate > 0.0 && report.mcmc.acceptance_rate < 1.0);
    assert!(log.contains("acceptance"), "{log}");

    // Without observed maps an entry's metadata would hold only zeros: no metadata files.
    let metadata_files = std::fs::read_dir(out.join("corpus"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".metadata"))
        .count();
    assert_eq!(metadata_files, 0);

    // The corpus holds the seed and, of the states the chain accepted, the one it stands on and
    // those that state reads through back to a whole save: the files of the others were
    // deleted. All are made of Athena's moves.
    let variants: Vec<Variant> = std::fs::read_dir(out.join("corpus"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .map(|p| Variant::from_file(&p).unwrap())
        .collect();
    let seed_name = Variant::of_seed(variants[0].seed.clone()).name();
    accepted_states.remove(&seed_name);
    let states: std::collections::BTreeSet<String> = variants
        .iter()
        .filter(|v| !v.edits().is_empty())
        .map(Variant::name)
        .collect();
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("mcmc/chains-client-1.json")).unwrap()).unwrap();
    let standing = saved.as_object().unwrap().values().next().unwrap()["variant"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(states.is_subset(&accepted_states), "{states:?}");
    assert!(states.contains(&standing), "{standing} not in {states:?}");
    assert!(states.len() <= CHECKPOINT as usize, "{} states kept", states.len());
    assert!(report.mcmc.deleted_files > 0, "{:?}", report.mcmc);
    for variant in &variants {
        for edit in variant.edits() {
            assert!(
                matches!(edit, Edit::Delete { .. } | Edit::Transplant { .. }),
                "{edit:?}"
            );
        }
    }

    // Started again, the campaign continues the chain where it stopped.
    let log = athena_on_dead_code("20");
    assert!(log.contains("1 chains continue where they stopped"), "{log}");
    let csv = std::fs::read_to_string(out.join("mcmc/client-1.csv")).unwrap();
    let resumed: Vec<Vec<&str>> = csv
        .lines()
        .skip(1 + rows.len())
        .map(|l| l.split(',').collect())
        .collect();
    assert!(!resumed.is_empty(), "no decision after the restart");
    assert_eq!(
        resumed[0][5].parse::<usize>().unwrap(),
        rows.len() + 1,
        "{:?}",
        resumed[0]
    );
    assert!(resumed[0][6].parse::<u64>().unwrap() >= length, "{:?}", resumed[0]);
}
