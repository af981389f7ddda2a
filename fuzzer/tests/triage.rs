//! `ccfuzz triage` end to end on a real TinyCC 0.9.27 bug: a campaign against `tcc -b` finds
//! it in two different programs, and triage reduces one, finds it UB-free, absorbs the other
//! by its cheap fingerprint into one bug and writes a report whose script reproduces it. A
//! finding of a bug on a known-bugs list is counted apart instead.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

fn bugs_json(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(out.join("triage/bugs/bugs.json")).unwrap()).unwrap()
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn a_tcc_bounds_checker_bug_found_twice_is_one_small_reproducible_bug() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["tcc -b"], 60.0);
    let log = campaign(
        &out,
        &config,
        &["--seeds", seeds("tcc").to_str().unwrap(), "--seconds", "15"],
    );
    let found = findings(&out);
    assert_eq!(found.len(), 2, "one finding per seed expected:\n{log}");

    let output = ccfuzz().arg("triage").arg(&out).output().unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    // The smaller is reduced; the other has its cheap fingerprint and is absorbed.
    assert!(
        log.contains("2 raw findings: 1 reduced, 1 duplicates of a reduced one"),
        "{log}"
    );
    assert!(log.contains("1 distinct bugs"), "{log}");
    let bugs = bugs_json(&out);
    let bugs = bugs.as_array().unwrap();
    assert_eq!(bugs.len(), 1, "{bugs:?}");
    let bug = &bugs[0];
    assert_eq!(bug["configuration"], "tcc -b");
    assert_eq!(bug["findings"].as_array().unwrap().len(), 2);
    assert!(bug["fingerprint"].as_str().unwrap().contains("BCHECK"), "{bug}");
    assert!(bug["lines"].as_u64().unwrap() <= 40, "{bug}");

    let bug_dir = out.join("triage/bugs").join(bug["name"].as_str().unwrap());
    let repro = Command::new(bug_dir.join("repro.sh")).output().unwrap();
    let repro_log = text(&repro);
    assert!(repro.status.success(), "{repro_log}");
    assert!(
        repro_log.contains("expected (gcc -O0)") && repro_log.contains("BCHECK"),
        "{repro_log}"
    );
    // The reduced test passes the UB guard (warnings, UBSan+ASan, clang -O0 agreement).
    let guard = Command::new("sh")
        .arg(bug_dir.join("interesting.sh"))
        .arg(bug_dir.join("test.c"))
        .status()
        .unwrap();
    assert!(guard.success());
    let report = std::fs::read_to_string(bug_dir.join("report.md")).unwrap();
    assert!(report.contains("tcc version 0.9.27"), "{report}");
    // Tried again with the newest installed tcc (the same one here), and where to look upstream.
    assert!(report.contains("- `tcc -b`: still shows"), "{report}");
    assert!(
        report.contains("## Known upstream?\n\nTinyCC has no issue tracker"),
        "{report}"
    );

    // A second run reads the results back instead of reducing again.
    let started = std::time::Instant::now();
    let again = ccfuzz().arg("triage").arg(&out).output().unwrap();
    let round = started.elapsed() + std::time::Duration::from_secs(1);
    let again_log = text(&again);
    assert!(!again_log.contains("triaging "), "{again_log}");
    assert_eq!(bugs_json(&out).as_array().unwrap().len(), 1);

    // Watching, it prints the summary once while nothing changes (a campaign's triage.log):
    // given the time of three rounds, it prints it once.
    let mut watching = ccfuzz()
        .args(["triage", "--watch", "1"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(3 * round);
    watching.kill().unwrap();
    let watched = text(&watching.wait_with_output().unwrap());
    assert_eq!(watched.matches("2 raw findings").count(), 1, "{watched}");
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn an_unneeded_edit_that_trips_the_guard_does_not_decide_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let seed_dir = dir.path().join("seed");
    std::fs::create_dir_all(&seed_dir).unwrap();
    std::fs::copy(seeds("char").join("plain_char.c"), seed_dir.join("plain_char.c")).unwrap();
    // plain_char.c alone prints something else under -funsigned-char: no edit is needed.
    let config = write_config(dir.path(), &["gcc -O0 -funsigned-char"], 60.0);
    let id = store_seed(&out, &config, &seed_dir);
    // An edit the symptom does not need, which reads an uninitialized variable: the guard's
    // warnings reject the variant that carries it.
    let replayed = replay_insertion(&out, &config, id, "{ int unset; if (unset) g = g; }\n");
    assert_eq!(findings(&out).len(), 1, "{}", text(&replayed));

    let log = triage_without_text_reduction(&out, Some(&config));
    assert!(log.contains("1 raw findings: 1 reduced"), "{log}");
    let bugs = bugs_json(&out);
    assert_eq!(bugs.as_array().unwrap().len(), 1, "{bugs}");
    let reduced = std::fs::read_to_string(
        out.join("triage/bugs")
            .join(bugs[0]["name"].as_str().unwrap())
            .join("test.c"),
    )
    .unwrap();
    assert!(!reduced.contains("unset"), "{reduced}");
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn a_second_finding_of_a_reduced_bug_is_absorbed_without_reduction() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["gcc -O0 -funsigned-char"], 60.0);
    // Two seeds that print different numbers, both wrong under -funsigned-char: two raw
    // findings of one bug.
    let plain_char = std::fs::read_to_string(seeds("char").join("plain_char.c")).unwrap();
    let mut ids = Vec::new();
    for (name, text) in [("a", plain_char.clone()), ("b", plain_char.replace("i < 10", "i < 12"))] {
        let seed_dir = dir.path().join(name);
        std::fs::create_dir_all(&seed_dir).unwrap();
        std::fs::write(seed_dir.join(format!("{name}.c")), text).unwrap();
        ids.push(store_seed(&out, &config, &seed_dir));
    }
    for id in ids {
        replay_insertion(&out, &config, id, "g = g;\n");
    }
    assert_eq!(findings(&out).len(), 2);
    // A triage killed while reducing both left its reducer's program in their work directories.
    for finding in findings(&out) {
        let reduced = out
            .join("triage/work")
            .join(finding.file_name().unwrap())
            .join("reduced/test.c");
        std::fs::create_dir_all(reduced.parent().unwrap()).unwrap();
        std::fs::write(&reduced, &plain_char).unwrap();
    }
    // Its scripts, killed, left their temporary directories in triage's scratch.
    let scratch = out.join("triage/tmp");
    std::fs::create_dir_all(scratch.join("tmp.killed")).unwrap();
    std::fs::write(scratch.join("tmp.killed/bad"), "a binary").unwrap();
    // Triage's reference records the TMPDIR it is given.
    let tmpdirs = dir.path().join("tmpdirs.log");
    let reference = dir.path().join("gcc-noting-tmpdir");
    std::fs::write(
        &reference,
        format!(
            "#!/bin/sh\necho \"$TMPDIR\" >> {}\nexec gcc \"$@\"\n",
            tmpdirs.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&reference, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let triage_config = dir.path().join("triage.toml");
    std::fs::write(
        &triage_config,
        std::fs::read_to_string(&config).unwrap().replace(
            "reference = \"gcc -O0\"",
            &format!("reference = \"{} -O0\"", reference.display()),
        ),
    )
    .unwrap();

    let log = triage_without_text_reduction(&out, Some(&triage_config));
    assert!(
        log.contains("2 raw findings: 1 reduced, 1 duplicates of a reduced one"),
        "{log}"
    );
    let bugs = bugs_json(&out);
    assert_eq!(bugs.as_array().unwrap().len(), 1, "{bugs}");
    assert_eq!(bugs[0]["findings"].as_array().unwrap().len(), 2, "{bugs}");
    // The duplicate was neither minimized nor reduced: it names its representative.
    let work = out.join("triage/work");
    let verdicts: Vec<serde_json::Value> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|path| path.is_dir())
        .map(|path| serde_json::from_slice(&std::fs::read(path.join("result.json")).unwrap()).unwrap())
        .collect();
    let duplicate = verdicts
        .iter()
        .find(|v| v["verdict"].get("duplicate").is_some())
        .unwrap_or_else(|| panic!("{verdicts:?}"));
    let representative = duplicate["verdict"]["duplicate"]["of"].as_str().unwrap();
    assert!(verdicts
        .iter()
        .any(|v| v["finding"] == representative && v["verdict"] == "reduced"));
    assert!(!work
        .join(duplicate["finding"].as_str().unwrap())
        .join("reduced")
        .exists());
    // What the killed triage had reduced goes once each finding has its verdict, whichever.
    let left: Vec<_> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".interrupted.c"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // Every compile of the triage kept its temporary files in the scratch, which is empty.
    let tmpdirs = std::fs::read_to_string(&tmpdirs).unwrap();
    let scratch = scratch.canonicalize().unwrap();
    assert!(
        !tmpdirs.is_empty() && tmpdirs.lines().all(|line| Path::new(line).starts_with(&scratch)),
        "{tmpdirs}"
    );
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn a_finding_of_a_known_bug_is_counted_apart_and_not_reduced() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["gcc -O0 -funsigned-char"], 60.0);
    // The known bug's reduced test and the finding are different programs that both print
    // something else under -funsigned-char: one bug, whose fingerprint is the flag.
    let plain_char = std::fs::read_to_string(seeds("char").join("plain_char.c")).unwrap();
    let seed_dir = dir.path().join("seed");
    std::fs::create_dir_all(&seed_dir).unwrap();
    std::fs::write(seed_dir.join("a.c"), &plain_char).unwrap();
    let id = store_seed(&out, &config, &seed_dir);
    replay_insertion(&out, &config, id, "g = g;\n");
    assert_eq!(findings(&out).len(), 1);
    let lists = dir.path().join("lists");
    std::fs::create_dir_all(lists.join("plain-char")).unwrap();
    std::fs::write(lists.join("plain-char/test.c"), plain_char.replace("i < 10", "i < 12")).unwrap();
    std::fs::write(
        lists.join("known-bugs"),
        "# one per line\nplain-char/test.c  # char is signed\nc771cb52 # a commit, left out without a history\n",
    )
    .unwrap();
    // The list comes with the configuration, as a campaign's background triage reads it,
    // named relative to the configuration file.
    let triage_config = dir.path().join("triage.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.insert_str(0, "known_bugs = \"lists/known-bugs\"\n");
    std::fs::write(&triage_config, text).unwrap();

    let log = triage_without_text_reduction(&out, Some(&triage_config));
    assert!(
        log.contains("1 raw findings: 0 reduced, 0 duplicates of a reduced one, 1 of known bugs"),
        "{log}"
    );
    assert!(log.contains("0 distinct bugs"), "{log}");
    assert!(log.contains("a correcting commit needs --history"), "{log}");
    let finding = findings(&out).remove(0);
    let work = out.join("triage/work").join(finding.file_name().unwrap());
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(work.join("result.json")).unwrap()).unwrap();
    assert_eq!(
        result["verdict"]["known"]["bug"],
        lists
            .join("plain-char/test.c")
            .canonicalize()
            .unwrap()
            .display()
            .to_string(),
        "{result}"
    );
    assert!(!work.join("reduced").exists(), "a known bug's finding is not reduced");

    // Without the list, the same finding is a bug of its own.
    std::fs::remove_dir_all(out.join("triage")).unwrap();
    let log = triage_without_text_reduction(&out, Some(&config));
    assert!(log.contains("1 raw findings: 1 reduced"), "{log}");
}
