//! Judging an execution: findings (mismatches, compiler crashes and hangs, [`objective`]) and
//! what keeps a variant in the corpus besides the MCMC acceptance ([`new_seed`]).

pub mod new_seed;
pub mod objective;
pub mod validity;
