//! Triage: from raw findings to reportable bugs. A finding (seed + edits) is first minimized
//! on its edit list (ddmin), then reduced as text by cvise or creduce under an interestingness
//! test that keeps the symptom and rejects undefined behaviour; the reduced program is
//! fingerprinted (crash signature, or the compiler pass that causes the wrong code), findings
//! with one fingerprint are merged into one bug, and each bug gets a report directory. Findings
//! are bucketed first, so that one representative per bucket is reduced and the others are
//! absorbed when their cheap fingerprint matches. A reduced bug is tried again with the newest
//! installed compilers of its family, and a gcc or clang bug under every installed version of its
//! family (the version matrix). Findings of bugs on a known-bugs list are recognized by the
//! same cheap fingerprint and counted apart.

pub mod bucket;
pub mod check;
pub mod ddmin;
pub mod finding;
pub mod fingerprint;
pub mod known;
pub mod matrix;
pub mod newest;
pub mod pipeline;
pub mod reduce;
pub mod report;
pub mod verdict;
