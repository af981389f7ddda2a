//! Operating a running campaign: the status line ([`status`]), stopping cleanly on a signal
//! ([`shutdown`]), background triage ([`background_triage`]) and the monitor's user
//! statistics ([`user_stats`]).

pub mod background_triage;
pub mod orphan_memory;
pub mod shutdown;
pub mod status;
pub mod user_stats;
