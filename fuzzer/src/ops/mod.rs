//! Operating a running campaign: the status line ([`status`]), stopping cleanly on a signal
//! ([`shutdown`]), background triage ([`background_triage`]), the monitor's user
//! statistics ([`user_stats`]), a resident memory that follows what is held ([`heap`]) and the
//! CPU time and memory figures of processes ([`usage`]). It imports no other folder of the crate.

pub mod background_triage;
pub mod format_version;
pub mod heap;
pub mod orphan_memory;
pub mod shutdown;
pub mod status;
pub mod usage;
pub mod user_stats;
