//! A campaign on many cores and machines: the launcher and its LLMP broker, each fuzzing client,
//! resuming from disk, replaying saved variants, what crosses between cores and nodes, and
//! what a campaign reports.

pub mod broker;
pub mod client;
pub mod client_report;
pub mod launcher;
pub mod manager;
pub mod options;
pub mod progress;
pub mod replay;
pub mod resume;
pub mod scratch;
pub mod summary;

pub use client_report::ClientReport;
pub use launcher::run_campaign;
pub use options::{CampaignOptions, CampaignState, MixedSource, SeedSource};
pub use replay::replay;
