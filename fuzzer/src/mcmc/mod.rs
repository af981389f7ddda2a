//! The campaign's MCMC: one Metropolis–Hastings chain per seed, as LibAFL pieces.
//!
//! - [`ChainMutator`] proposes Q* from the chain's state Q with Athena, Hermes or Orion and
//!   leaves the proposal's ln q(Q|Q*)/q(Q*|Q) in the state ([`PendingProposal`]).
//! - [`AcceptanceFeedback`] judges the proposal after it was compiled and run (so every proposal
//!   is tested for mismatches): energy E = Athena's Δ(Q*; seed) + w_c·(compiler-coverage entries
//!   it set first) + w_o·(optimization counters it set first), accepted with the Metropolis–
//!   Hastings probability. Zero weights are Athena as published. An accepted proposal is
//!   corpus-worthy. [`CorpusFeedback`] runs it among the other corpus feedbacks, in the order
//!   their results depend on.
//! - [`FamilyYields`] counts what each family's proposals bring per second; the mutator may
//!   draw families by it ([`FamilyChoice`]).
//! - [`McmcScheduler`] hands out the current state of the active chain, moves a chain to a newly
//!   added accepted proposal, starts a chain for every seed and turns to the next seed after a
//!   number of proposals.
//!
//! What passes between these pieces as state metadata is tabled in ARCHITECTURE.md ("The MCMC
//! metadata protocol"). Chains and their statistics are state metadata ([`McmcChains`]); every decision is appended
//! to `OUT/mcmc/client-N.csv` ([`DecisionLog`], bounded).

pub(crate) mod acceptance;
mod chain_options;
mod chains;
mod corpus_feedback;
mod decision_log;
mod family_yield;
mod mutator;
mod scheduler;

pub use acceptance::AcceptanceFeedback;
pub use chain_options::{Family, FamilyChoice, Guidance, McmcOptions, LONGEST_CHAIN};
pub use chains::{restore_chains, Chain, ChainsFile, DistanceByLength, McmcChains};
pub use corpus_feedback::CorpusFeedback;
pub use decision_log::DecisionLog;
pub use family_yield::{FamilyYield, FamilyYields};
pub use mutator::{ChainMutator, PendingProposal};
pub use scheduler::McmcScheduler;

/// A campaign's LibAFL state on a fresh corpus in `dir`, without feedback, for the tests.
/// The campaign's state type (`campaign::options::CampaignState`), spelled out for the tests
/// so that `mcmc/` does not import `campaign/`.
#[cfg(test)]
pub(crate) type TestState = libafl::state::StdState<
    ccfuzz_mutators::saved::corpus::VariantCorpus,
    ccfuzz_mutators::input::Variant,
    libafl_bolts::rands::StdRand,
    crate::judge::findings::FindingsCorpus,
>;

#[cfg(test)]
pub(crate) fn test_state(dir: &std::path::Path) -> TestState {
    use crate::judge::findings::FindingsCorpus;
    use ccfuzz_mutators::saved::corpus::VariantCorpus;
    use libafl::feedbacks::ConstFeedback;
    let mut no_feedback = ConstFeedback::new(false);
    let mut no_objective = ConstFeedback::new(false);
    libafl::state::StdState::new(
        libafl_bolts::rands::StdRand::with_seed(1),
        VariantCorpus::new(dir.join("corpus"), 4, true, false).unwrap(),
        FindingsCorpus::new(dir.join("findings"), crate::config::Config::detect(false)),
        &mut no_feedback,
        &mut no_objective,
    )
    .unwrap()
}
