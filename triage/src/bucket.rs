//! Buckets: findings that are likely one bug, recognized before the expensive reduction. A
//! bucket is one configuration and one symptom class; within it, the smallest variant is
//! reduced first. A finding whose cheap fingerprint (the fingerprint of its unreduced variant: the
//! bisected pass, the crash signature, the output difference) equals that of a reduced
//! representative in its bucket is absorbed as its duplicate instead of being reduced again.
//! An unedited Orange program whose cheap fingerprint is new (it names the program's checksum,
//! which every step of a mutation chain changes) is absorbed after Orange's minimization, when
//! that comes down to the program a representative's came down to.

use crate::check::{Check, Symptom};
use crate::finding::SavedFinding;
use crate::verdict::{Triaged, Verdict};

/// The symptom without what varies from program to program (crash markers): findings of one
/// bug have one class.
pub fn symptom_class(symptom: &Symptom) -> String {
    match symptom {
        Symptom::Mismatch(misbehaviour) => misbehaviour.describe(),
        Symptom::Crash {
            signal: Some(signal), ..
        } => format!("compiler killed by signal {signal}"),
        Symptom::Crash { signal: None, .. } => "compiler crash".into(),
        Symptom::Hang => "compiler hang".into(),
    }
}

/// Sorts findings bucket by bucket (configuration, symptom class), smallest variant first
/// within a bucket: its representative is the cheapest to reduce.
pub fn order_by_bucket(findings: &mut [(SavedFinding, Check)]) {
    findings.sort_by_cached_key(|(saved, check)| {
        let size = std::fs::metadata(saved.dir.join("variant.c")).map_or(u64::MAX, |m| m.len());
        (
            check.configuration.clone(),
            symptom_class(&check.symptom),
            size,
            saved.name.clone(),
        )
    });
}

/// Whether any reduced finding shares this check's bucket: only then is a cheap fingerprint
/// worth computing before the reduction.
pub fn has_representatives(check: &Check, results: &[Triaged]) -> bool {
    candidates(check, results).next().is_some()
}

/// The reduced finding (or duplicate of one) of this check's bucket whose cheap fingerprint is
/// `cheap`.
pub fn representative<'a>(check: &Check, cheap: &str, results: &'a [Triaged]) -> Option<&'a Triaged> {
    candidates(check, results).find(|r| r.cheap_fingerprint.as_deref() == Some(cheap))
}

/// The reduced finding (or duplicate of one) of this check's bucket whose Orange minimization
/// came down to the program `minimized`.
pub fn same_minimized_program<'a>(check: &Check, minimized: &str, results: &'a [Triaged]) -> Option<&'a Triaged> {
    candidates(check, results).find(|r| r.orange.as_ref().is_some_and(|o| o.program == minimized))
}

fn candidates<'a>(check: &Check, results: &'a [Triaged]) -> impl Iterator<Item = &'a Triaged> + 'a {
    let class = symptom_class(&check.symptom);
    let configuration = check.configuration.clone();
    // A duplicate absorbed after Orange's minimization has a cheap fingerprint of its own, which
    // the next program of its mutation chain may share.
    results.iter().filter(move |r| {
        matches!(r.verdict, Verdict::Reduced | Verdict::Duplicate { .. })
            && r.cheap_fingerprint.is_some()
            && r.configuration == configuration
            && symptom_class(&r.check.symptom) == class
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{wrong_output_check, Misbehaviour};
    use crate::finding::FindingKind;
    use crate::verdict::OrangeMinimization;

    fn check(configuration: &str, symptom: Symptom) -> Check {
        Check {
            symptom,
            ..wrong_output_check(configuration)
        }
    }

    fn result(name: &str, check: Check, verdict: Verdict, cheap: Option<&str>) -> Triaged {
        Triaged {
            finding: name.into(),
            kind: FindingKind::Mismatch,
            configuration: check.configuration.clone(),
            verdict,
            check,
            edits_before: 1,
            edits_after: 1,
            lines_before: 100,
            lines_after: 10,
            fingerprint: Some("wrong output: clang pass X".into()),
            cheap_fingerprint: cheap.map(String::from),
            reason: None,
            test: "test.c".into(),
            seconds: 1.0,
            orange: None,
            newest: Vec::new(),
            matrix: Vec::new(),
        }
    }

    #[test]
    fn only_a_reduced_finding_of_the_same_bucket_and_cheap_fingerprint_represents() {
        let wrong = || Symptom::Mismatch(Misbehaviour::WrongOutput);
        let results = vec![
            result("a", check("clang -O2", wrong()), Verdict::Reduced, Some("pass X")),
            result("b", check("clang -O3", wrong()), Verdict::Reduced, Some("pass Y")),
            result(
                "c",
                check("clang -O2", wrong()),
                Verdict::RejectedByGuard,
                Some("pass Y"),
            ),
            result(
                "d",
                check("clang -O2", Symptom::Mismatch(Misbehaviour::Signal(11))),
                Verdict::Reduced,
                Some("pass Z"),
            ),
        ];
        let new = check("clang -O2", wrong());
        assert!(has_representatives(&new, &results));
        assert_eq!(representative(&new, "pass X", &results).unwrap().finding, "a");
        // A duplicate stands for the reduced finding it is a duplicate of.
        let mut results = results;
        results.push(result(
            "e",
            check("clang -O2", wrong()),
            Verdict::Duplicate { of: "a".into() },
            Some("pass W"),
        ));
        assert_eq!(representative(&new, "pass W", &results).unwrap().reduced_finding(), "a");
        assert_eq!(results[0].reduced_finding(), "a");
        // Another configuration, a rejected finding and another symptom class never represent.
        assert!(representative(&new, "pass Y", &results).is_none());
        assert!(representative(&new, "pass Z", &results).is_none());
        assert!(!has_representatives(&check("gcc -O2", wrong()), &results));
        // Crash markers vary with the program; the class does not.
        let crash = |markers: &[&str]| Symptom::Crash {
            signal: None,
            markers: markers.iter().map(|m| m.to_string()).collect(),
        };
        assert_eq!(symptom_class(&crash(&["in f, at a.c:"])), symptom_class(&crash(&["b"])));
    }

    #[test]
    fn an_orange_program_minimized_like_a_representative_is_its_duplicate() {
        let wrong = || Symptom::Mismatch(Misbehaviour::WrongOutput);
        let minimized = |program: &str| OrangeMinimization {
            lines_before: 3535,
            lines_after: 11,
            operators_before: 1795,
            operators_after: 1,
            expressions_before: 852,
            expressions_after: 1,
            tests: 74,
            seconds: 280.0,
            program: program.into(),
        };
        let with_orange = |name: &str, configuration: &str, verdict: Verdict, program: &str| Triaged {
            orange: Some(minimized(program)),
            ..result(name, check(configuration, wrong()), verdict, Some("checksum 1"))
        };
        let one_expression = "int main(void) { t1 = -1 % 131071U; }";
        let results = vec![
            with_orange("a", "pcc", Verdict::Reduced, one_expression),
            with_orange("b", "pcc", Verdict::Reduced, "int main(void) { t1 = 1 << 3; }"),
            with_orange("c", "tcc", Verdict::Reduced, "int main(void) { t2 = 0; }"),
            with_orange("d", "pcc", Verdict::RejectedByGuard, "int main(void) { t2 = 0; }"),
            // Written before the minimized program was kept.
            with_orange("e", "pcc", Verdict::Reduced, ""),
        ];
        let new = check("pcc", wrong());
        assert_eq!(
            same_minimized_program(&new, one_expression, &results).unwrap().finding,
            "a"
        );
        // Another configuration's or a rejected finding's program never represents.
        assert!(same_minimized_program(&new, "int main(void) { t2 = 0; }", &results).is_none());
        assert!(same_minimized_program(&new, "int main(void) { t1 = 1; }", &results).is_none());
    }
}
