//! What a campaign's MCMC is configured with: the proposing families, the weights of the
//! compilers' feedback in the energy, and Athena's parameters.

use ccfuzz_mutators::athena::AthenaParams;
use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// The mutator families that propose moves of the chains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ValueEnum)]
pub enum Family {
    Athena,
    Hermes,
    Orion,
}

/// How the chain mutator draws a proposal's family.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum FamilyChoice {
    /// Each family equally often.
    #[default]
    Uniform,
    /// In proportion to each family's recent yield per second (see `FamilyYields::weights`).
    Yield,
}

/// Weights of the compilers' feedback in the energy.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Guidance {
    /// Per compiler-coverage entry (AFL edge or gcov line) a proposal covered first.
    pub coverage: f64,
    /// Per optimization counter a proposal set first.
    pub counters: f64,
}

/// The default chain length at which a chain starts again from its seed: against tcc, the
/// chains' mean distance from their seeds peaked at 400–600 accepted moves and fell after
/// (`mcmc/client-N.csv` of 90-s campaigns).
pub const LONGEST_CHAIN: u64 = 500;

#[derive(Clone, Debug)]
pub struct McmcOptions {
    pub athena: AthenaParams,
    pub guidance: Guidance,
    /// Proposals made on a seed's chain before turning to the next seed.
    pub proposals_per_turn: u64,
    /// Chains in the rotation of a campaign whose seeds keep coming: a new seed's chain retires
    /// the oldest.
    pub active_chains: usize,
    /// Families drawn for each proposal.
    pub families: Vec<Family>,
    /// How they are drawn.
    pub family_choice: FamilyChoice,
    /// Accepted moves after which a chain starts again from its seed; `None`: never.
    pub longest_chain: Option<u64>,
    /// Bytes of the decision log before it is set aside (a client keeps at most twice this).
    pub decision_log_bytes: u64,
}

impl Default for McmcOptions {
    fn default() -> Self {
        McmcOptions {
            athena: AthenaParams::default(),
            guidance: Guidance::default(),
            proposals_per_turn: 50,
            active_chains: 4,
            families: vec![Family::Athena, Family::Hermes],
            family_choice: FamilyChoice::Uniform,
            longest_chain: Some(LONGEST_CHAIN),
            decision_log_bytes: 64 << 20,
        }
    }
}
