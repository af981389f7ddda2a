//! Triage of one finding, and of a campaign's findings directory: re-run (flaky or not),
//! edit-list ddmin, text reduction, fingerprint. Findings are taken bucket by bucket; one that
//! matches a reduced representative's cheap fingerprint is absorbed without reduction (an Orange
//! program after Orange's minimization, when it came down to a representative's program), and one
//! that matches a known bug's reduced test is counted apart (see [`crate::known`]). Each
//! finding's result is kept in its work directory, so triaging a growing campaign again only
//! looks at the new findings.

use crate::bucket::{has_representatives, order_by_bucket, representative, same_minimized_program};
use crate::check::{passes_arguments_by_prototype, run_script, Check, Guard, Misbehaviour, RunOptions, Symptom};
use crate::ddmin::ddmin;
use crate::finding::{saved_findings, FindingKind, SavedFinding};
use crate::fingerprint::{crash_markers, crash_signal, fingerprint};
use crate::known::KnownTests;
use crate::matrix::version_matrix;
use crate::newest::still_shows;
use crate::reduce::{line_count, reduce};
use crate::report::{write_reports, Bug};
use crate::verdict::{OrangeMinimization, Triaged, Verdict};
use anyhow::{Context, Result};
use ccfuzz_mutators::edit::apply_edits;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::seed::SeedStore;
use ccfuzz_orange::{minimize, Minimized, OrangeProgram};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How triage runs.
#[derive(Clone, Debug)]
pub struct Options {
    pub guard: Guard,
    /// `cvise` or `creduce`; `None` stops after edit-list minimization.
    pub reducer: Option<String>,
    /// Processes the reducer may use.
    pub jobs: usize,
    /// Runs of the original variant; a symptom that shows in some but not all is flaky.
    pub runs: u32,
    /// The newest installed compilers (program names or paths), each tried on a reduced bug of
    /// its family.
    pub newest: Vec<String>,
    /// Every installed version of gcc and of clang, oldest first within a family: a reduced gcc
    /// or clang bug runs under each of its family's (the version matrix).
    pub matrix: Vec<String>,
    /// The findings to triage, by name; `None`: all of them. Buckets made by correcting commit
    /// need one reduced test each, not one per finding.
    pub only: Option<BTreeSet<String>>,
}

/// The interestingness check of a finding.
pub fn check_of(saved: &SavedFinding, guard: &Guard) -> Check {
    let finding = &saved.finding;
    let symptom = match finding.kind {
        FindingKind::Mismatch => Symptom::Mismatch(Misbehaviour::from_description(&finding.expected, &finding.actual)),
        FindingKind::Crash => {
            let message = finding.message.clone().unwrap_or_default();
            match crash_signal(&message) {
                Some(signal) => Symptom::Crash {
                    signal: Some(signal),
                    markers: Vec::new(),
                },
                None => Symptom::Crash {
                    signal: None,
                    markers: crash_markers(&message),
                },
            }
        }
        FindingKind::Hang => Symptom::Hang,
    };
    Check {
        configuration: finding.configuration.clone(),
        symptom,
        guard: guard.clone(),
        prototypes: false,
    }
}

/// Triages one finding in `work` (created, emptied first). `cheap_fingerprint` is its
/// unreduced variant's fingerprint when already computed.
pub fn triage_finding(
    saved: &SavedFinding,
    programs: Option<&Programs>,
    work: &Path,
    options: &Options,
    cheap_fingerprint: Option<String>,
    earlier: &[Triaged],
) -> Result<Triaged> {
    let started = Instant::now();
    set_aside_interrupted(work);
    let _ = fs::remove_dir_all(work);
    fs::create_dir_all(work).with_context(|| format!("cannot create {}", work.display()))?;
    let variant = saved.variant_text()?;
    let start = work.join("start").join("test.c");
    write_file(&start, &variant)?;
    let mut check = check_of(saved, &options.guard);
    check.prototypes = passes_arguments_by_prototype(&options.guard, &start)?;
    let script = check.write(work)?;
    let mut result = Triaged {
        finding: saved.name.clone(),
        kind: saved.finding.kind,
        configuration: saved.finding.configuration.clone(),
        verdict: Verdict::NotReproduced,
        check: check.clone(),
        edits_before: saved.finding.edits.len(),
        edits_after: saved.finding.edits.len(),
        lines_before: line_count(&variant),
        lines_after: line_count(&variant),
        fingerprint: None,
        cheap_fingerprint,
        reason: None,
        test: start.clone(),
        seconds: 0.0,
        orange: None,
        newest: Vec::new(),
        matrix: Vec::new(),
    };
    // The first run includes the guard; the re-runs only ask whether the symptom shows.
    let first_run = work.join("first-run");
    let clean = run_script(
        &script,
        &start,
        &RunOptions {
            keep: Some(first_run.clone()),
            ..RunOptions::default()
        },
    )?;
    let symptom_only = RunOptions {
        without_guard: true,
        ..RunOptions::default()
    };
    let mut shown = u32::from(clean || run_script(&script, &start, &symptom_only)?);
    for _ in 1..options.runs {
        shown += u32::from(run_script(&script, &start, &symptom_only)?);
    }
    result.verdict = if shown == 0 {
        Verdict::NotReproduced
    } else if shown < options.runs {
        Verdict::Flaky {
            shown,
            runs: options.runs,
        }
    } else {
        Verdict::Reduced
    };
    if result.verdict != Verdict::Reduced {
        result.seconds = started.elapsed().as_secs_f64();
        return Ok(result);
    }
    if result.cheap_fingerprint.is_none() {
        result.cheap_fingerprint = Some(fingerprint_unreduced(&check, &script, &start, work)?);
    }

    // Edit-list minimization, when the seed is at hand to apply edits to. It runs before the
    // guard judges the variant: an edit the symptom does not need (a snippet with a constant
    // a compiler diagnoses, a deletion that removed a return) must not decide the verdict.
    // Each step of a reduction of a binary that does not terminate would wait the whole run
    // limit; the reduction's steps tell it by the reference's run time, and what they keep is
    // checked with the whole limit.
    let quick_hang = check.symptom == Symptom::Mismatch(Misbehaviour::Timeout);
    let mut text = variant;
    let edits = &saved.finding.edits;
    if let Some((programs, loaded)) = programs.and_then(|p| p.get(&saved.finding.seed).ok().map(|l| (p, l))) {
        let candidate = work.join("ddmin").join("test.c");
        let quick = RunOptions {
            quick_hang,
            ..RunOptions::default()
        };
        let mut minimal = ddmin(edits, |subset| {
            write_file(&candidate, &apply_edits(&loaded.program, subset))?;
            run_script(&script, &candidate, &quick)
        })?;
        if quick_hang {
            write_file(&candidate, &apply_edits(&loaded.program, &minimal))?;
            if !run_script(&script, &candidate, &RunOptions::default())? {
                log::warn!(
                    "{}: the minimal edits end within the run limit; keeping them all",
                    saved.name
                );
                minimal = edits.clone();
            }
        }
        result.edits_after = minimal.len();
        text = apply_edits(&loaded.program, &minimal);
        log::info!("{}: {} of {} edits needed", saved.name, minimal.len(), edits.len());
        // The seed alone shows the symptom: an Orange seed is minimized as a program first.
        let seed = &saved.finding.seed;
        let orange = if minimal.is_empty() {
            programs.store().orange_program(seed)?
        } else {
            None
        };
        if let Some(json) = orange {
            let program: OrangeProgram =
                serde_json::from_str(&json).with_context(|| format!("bad Orange program of seed {seed}"))?;
            if let Some((minimization, minimized)) =
                minimize_orange(&saved.name, &program, &script, &work.join("orange"))?
            {
                result.orange = Some(minimization);
                // One mutation chain's programs differ in their checksums, so in their cheap
                // fingerprints, but often minimize to the same expression: one bug, not reduced again.
                if let Some(first) = same_minimized_program(&check, &minimized, earlier) {
                    log::info!("{}: minimized to the program of {}", saved.name, first.finding);
                    let test = work.join("minimized").join("test.c");
                    write_file(&test, &minimized)?;
                    result.verdict = Verdict::Duplicate {
                        of: first.reduced_finding().to_string(),
                    };
                    result.fingerprint = first.fingerprint.clone();
                    result.lines_after = line_count(&minimized);
                    result.test = test;
                    result.seconds = started.elapsed().as_secs_f64();
                    return Ok(result);
                }
                text = minimized;
            }
        }
    }
    // The symptom shows on every run; the guard judges the program the edits came down to.
    if !clean {
        let minimized = work.join("minimized");
        let candidate = minimized.join("test.c");
        write_file(&candidate, &text)?;
        let judged = RunOptions {
            keep: Some(minimized.clone()),
            ..RunOptions::default()
        };
        if !run_script(&script, &candidate, &judged)? {
            result.reason = fs::read_to_string(minimized.join("reason.err"))
                .ok()
                .or_else(|| fs::read_to_string(first_run.join("reason.err")).ok())
                .map(|r| r.trim().to_string());
            result.verdict = Verdict::RejectedByGuard;
            result.seconds = started.elapsed().as_secs_f64();
            return Ok(result);
        }
    }

    let reduced = work.join("reduced").join("test.c");
    write_file(&reduced, &text)?;
    if let Some(earlier) = interrupted_reduction(work, &script, &reduced, &text)? {
        log::info!(
            "{}: the reduction goes on from the {} lines a stopped triage left",
            saved.name,
            line_count(&earlier)
        );
        text = earlier;
    }
    // Whether the reduced program was checked with the whole run limit already.
    let mut stands = false;
    if let Some(reducer) = &options.reducer {
        let timeout = Duration::from_secs(4 * (options.guard.compile_timeout + options.guard.run_timeout));
        reduce(reducer, &script, &reduced, options.jobs, timeout, quick_hang)?;
        stands = quick_hang && run_script(&script, &reduced, &RunOptions::default())?;
        if quick_hang && !stands {
            // A step kept a program that runs long but ends: reduce again with the whole limit.
            log::warn!(
                "{}: the reduced program terminates within the run limit; reducing again without the quick hang limit",
                saved.name
            );
            write_file(&reduced, &text)?;
            reduce(reducer, &script, &reduced, options.jobs, timeout, false)?;
        }
        text = fs::read_to_string(&reduced)?;
    }
    // The reducer only keeps what the script accepts; check once more that the result stands.
    if !stands && !run_script(&script, &reduced, &RunOptions::default())? {
        anyhow::bail!("{}: the reduced program no longer shows the symptom", saved.name);
    }
    result.lines_after = line_count(&text);
    let _ = fs::remove_file(interrupted_path(work));
    result.fingerprint = Some(fingerprint(&check, &script, &reduced, work)?);
    result.newest = still_shows(&check, &reduced, &options.newest, work)?;
    result.matrix = version_matrix(&check, &reduced, &options.matrix, work)?;
    result.test = reduced;
    result.seconds = started.elapsed().as_secs_f64();
    Ok(result)
}

/// Orange's minimizer under the finding's script; the minimized program's text. `None` when the
/// program rendered again from its structure does not show the symptom (the seed text is a
/// normalized rendering).
fn minimize_orange(
    name: &str,
    program: &OrangeProgram,
    script: &Path,
    dir: &Path,
) -> Result<Option<(OrangeMinimization, String)>> {
    let started = Instant::now();
    let candidate = dir.join("test.c");
    let minimized = minimize(program, |candidate_program| {
        write_file(&candidate, &candidate_program.to_c())?;
        run_script(script, &candidate, &RunOptions::default())
    })
    .with_context(|| format!("{name}: Orange minimization"))?;
    let Some(Minimized {
        program: smallest,
        tests,
    }) = minimized
    else {
        log::warn!("{name}: the Orange program rendered again does not show the symptom");
        return Ok(None);
    };
    let text = smallest.to_c();
    let minimization = OrangeMinimization {
        lines_before: line_count(&program.to_c()),
        lines_after: line_count(&text),
        operators_before: program.size(),
        operators_after: smallest.size(),
        expressions_before: program.live_expressions(),
        expressions_after: smallest.live_expressions(),
        tests,
        seconds: started.elapsed().as_secs_f64(),
        program: text.clone(),
    };
    log::info!(
        "{name}: Orange minimization {} -> {} lines, {} -> {} operators, {} tests",
        minimization.lines_before,
        minimization.lines_after,
        minimization.operators_before,
        minimization.operators_after,
        tests
    );
    Ok(Some((minimization, text)))
}

/// Where the program a stopped triage's reducer had got to waits, beside the finding's work
/// directory (which every triage of the finding empties first).
fn interrupted_path(work: &Path) -> PathBuf {
    let name = work
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    work.with_file_name(format!("{name}.interrupted.c"))
}

/// Keeps the reducer's program of a triage that stopped in `work` (killed, or the machine
/// gone): an hour of cvise is not started again from the seed.
fn set_aside_interrupted(work: &Path) {
    let reduced = work.join("reduced").join("test.c");
    if reduced.exists() {
        let _ = fs::rename(&reduced, interrupted_path(work));
    }
}

/// The program a stopped triage of `work` had reduced to, now written at `reduced`: when it is
/// smaller than `text` (written there otherwise) and passes `script` (the guard may have
/// changed since).
fn interrupted_reduction(work: &Path, script: &Path, reduced: &Path, text: &str) -> Result<Option<String>> {
    let Ok(earlier) = fs::read_to_string(interrupted_path(work)) else {
        return Ok(None);
    };
    if earlier.len() < text.len() {
        write_file(reduced, &earlier)?;
        if matches!(run_script(script, reduced, &RunOptions::default()), Ok(true)) {
            return Ok(Some(earlier));
        }
        write_file(reduced, text)?;
    }
    Ok(None)
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// The temporary directory (`TMPDIR`) of what `ccfuzz triage` runs on the campaign in `out`.
/// Interestingness scripts, reducers and compilers killed at their timeouts, or with the
/// campaign, cannot remove their own temporary files; triage empties this directory when it
/// starts and after each finding instead, so they stay bounded where a shared `/tmp` kept them for good.
pub fn scratch_dir(out: &Path) -> PathBuf {
    out.join("triage").join("tmp")
}

/// Removes what the last finding's processes left in the scratch directory.
fn empty_scratch(scratch: &Path) -> Result<()> {
    match fs::remove_dir_all(scratch) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot empty {}", scratch.display()))
        }
        _ => fs::create_dir_all(scratch).with_context(|| format!("cannot create {}", scratch.display())),
    }
}

/// Triage of a campaign directory: every finding of `OUT/findings` (those triaged before are
/// read back from `OUT/triage/work`), merged into bugs written to `OUT/triage/bugs`; `known`
/// keeps its tests' fingerprints from one call to the next.
pub fn triage_campaign(out: &Path, options: &Options, known: &mut KnownTests) -> Result<(Vec<Triaged>, Vec<Bug>)> {
    let _lock = TriageLock::take(&out.join("triage"))?;
    let scratch = scratch_dir(out);
    empty_scratch(&scratch)?;
    let findings = saved_findings(&out.join("findings"))?;
    let seeds = out.join("seeds");
    let programs = seeds
        .is_dir()
        .then(|| SeedStore::open(&seeds).map(|store| Programs::new(store, 4)))
        .transpose()?;
    let mut results = Vec::new();
    let mut pending = Vec::new();
    for saved in findings {
        if options.only.as_ref().is_some_and(|only| !only.contains(&saved.name)) {
            continue;
        }
        let result_path = out.join("triage").join("work").join(&saved.name).join("result.json");
        match fs::read(&result_path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Triaged>(&b).ok())
        {
            Some(result) => results.push(result),
            None => {
                let check = check_of(&saved, &options.guard);
                pending.push((saved, check));
            }
        }
    }
    order_by_bucket(&mut pending);
    for (saved, check) in &pending {
        let work = out.join("triage").join("work").join(&saved.name);
        log::info!("triaging {}", saved.name);
        let triaged = absorb_or_triage(saved, check, &results, known, programs.as_ref(), &work, options);
        empty_scratch(&scratch)?;
        match triaged {
            Ok(result) => {
                log::info!(
                    "{}: {:?}, {} -> {} lines, {:.0} s, {}",
                    saved.name,
                    result.verdict,
                    result.lines_before,
                    result.lines_after,
                    result.seconds,
                    result.fingerprint.as_deref().unwrap_or("-")
                );
                fs::write(work.join("result.json"), serde_json::to_vec_pretty(&result)?)?;
                // A finding with a verdict is not triaged again: a stopped reduction's program,
                // set aside for that, is of no use (a duplicate or a flaky one never needed it).
                let _ = fs::remove_file(interrupted_path(&work));
                results.push(result);
            }
            // One finding that cannot be triaged must not stop the others; it is tried again
            // next time.
            Err(e) => log::error!("cannot triage {}: {e:#}", saved.name),
        }
    }
    let bugs = write_reports(&out.join("triage").join("bugs"), &results)?;
    Ok((results, bugs))
}

/// A finding whose bucket has reduced members, or when bugs are known: its cheap fingerprint
/// first, and it is a known bug's when a known bug's reduced test has the same, a duplicate when
/// a representative has; otherwise (and for a first of its bucket) the whole triage.
fn absorb_or_triage(
    saved: &SavedFinding,
    check: &Check,
    results: &[Triaged],
    known: &mut KnownTests,
    programs: Option<&Programs>,
    work: &Path,
    options: &Options,
) -> Result<Triaged> {
    if !has_representatives(check, results) && known.is_empty() {
        return triage_finding(saved, programs, work, options, None, results);
    }
    let started = Instant::now();
    set_aside_interrupted(work);
    let _ = fs::remove_dir_all(work);
    fs::create_dir_all(work).with_context(|| format!("cannot create {}", work.display()))?;
    let script = check.write(work)?;
    let variant = saved.variant_text()?;
    let start = work.join("start").join("test.c");
    write_file(&start, &variant)?;
    let symptom_only = RunOptions {
        without_guard: true,
        ..RunOptions::default()
    };
    if !run_script(&script, &start, &symptom_only)? {
        return triage_finding(saved, programs, work, options, None, results);
    }
    let cheap = fingerprint_unreduced(check, &script, &start, work)?;
    let (verdict, fingerprint) = if let Some(bug) = known.matching(check, &cheap, work) {
        (Verdict::Known { bug }, None)
    } else if let Some(first) = representative(check, &cheap, results) {
        (
            Verdict::Duplicate {
                of: first.reduced_finding().to_string(),
            },
            first.fingerprint.clone(),
        )
    } else {
        return triage_finding(saved, programs, work, options, Some(cheap), results);
    };
    Ok(Triaged {
        finding: saved.name.clone(),
        kind: saved.finding.kind,
        configuration: saved.finding.configuration.clone(),
        verdict,
        check: check.clone(),
        edits_before: saved.finding.edits.len(),
        edits_after: saved.finding.edits.len(),
        lines_before: line_count(&variant),
        lines_after: line_count(&variant),
        fingerprint,
        cheap_fingerprint: Some(cheap),
        reason: None,
        test: start,
        seconds: started.elapsed().as_secs_f64(),
        orange: None,
        newest: Vec::new(),
        matrix: Vec::new(),
    })
}

/// The fingerprint of the unreduced variant `start`, computed in `work/cheap`.
fn fingerprint_unreduced(check: &Check, script: &Path, start: &Path, work: &Path) -> Result<String> {
    let scratch = work.join("cheap");
    fs::create_dir_all(&scratch).with_context(|| format!("cannot create {}", scratch.display()))?;
    fingerprint(check, script, start, &scratch)
}

/// One triage per campaign directory at a time (a background one and a manual one would reduce
/// the same finding twice): `triage/lock` holds the owner's pid while it works.
struct TriageLock {
    path: PathBuf,
}

impl TriageLock {
    fn take(dir: &Path) -> Result<Self> {
        fs::create_dir_all(dir)?;
        let path = dir.join("lock");
        if let Ok(owner) = fs::read_to_string(&path) {
            let owner = owner.trim();
            let alive = Path::new("/proc").join(owner).exists();
            if alive && owner != std::process::id().to_string() {
                anyhow::bail!("another ccfuzz triage (pid {owner}) is working on {}", dir.display());
            }
        }
        fs::write(&path, std::process::id().to_string())?;
        Ok(TriageLock { path })
    }
}

impl Drop for TriageLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests;
