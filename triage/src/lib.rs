//! Triage: from raw findings to reportable bugs. A finding (seed + edits) is first minimized
//! on its edit list (ddmin), then reduced as text by cvise or creduce under an interestingness
//! test that keeps the symptom and rejects undefined behaviour; the reduced program is
//! fingerprinted (crash signature, or the compiler pass that causes the wrong code), findings
//! with one fingerprint are merged into one bug, and each bug gets a report directory.

pub mod check;
pub mod ddmin;
pub mod finding;
pub mod fingerprint;
pub mod pipeline;
pub mod reduce;
pub mod report;
pub mod verdict;
