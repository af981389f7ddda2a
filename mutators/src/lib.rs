//! The C program model and the mutators that derive variants from seeds.
//!
//! A seed is parsed once ([`model::Program`]) into a statement table with spans, nesting,
//! execution from the profile and variables in scope. A variant ([`input::Variant`]) is the
//! seed's id plus a list of [`edit::Edit`]s, materialized by span replacement. Mutators such as
//! [`orion::OrionMutator`] are LibAFL `Mutator`s over variants.

pub mod athena;
pub mod compiler_version;
pub mod ctype;
pub mod edit;
pub mod flow_graph;
pub mod hermes;
pub mod input;
pub mod metropolis;
pub mod model;
pub mod orion;
pub mod pool;
pub mod programs;
pub mod pruning;
pub mod saved;
pub mod seed;
pub mod seed_id;
pub mod synthesis;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod ub_warnings;
pub mod valuation;
