//! What each source of programs yields per second: fresh seeds and each mutator family. Yield is
//! new findings, and the novelty that predicts them (compiler-coverage entries and optimization
//! counters a program set first). Kept as state metadata ([`FamilyYields`]) and reported per
//! client. With `--family-choice yield` the campaign spends its time as a multi-armed bandit
//! would, as MOpt does over AFL's mutation operators: fresh seeds get a share of the client's
//! time in proportion to their recent yield against the variants', and the chain mutator draws
//! a family in proportion to its own; a floor keeps every source explored.

use super::chain_options::Family;
use libafl_bolts::impl_serdeany;
use libafl_bolts::rands::Rand;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A new finding's worth, in the unit of the yield.
const FINDING_REWARD: f64 = 1.0;
/// A novel coverage entry's or counter's worth: a hundred of them weigh a finding.
const NOVELTY_REWARD: f64 = 0.01;
/// The share of the draws spread evenly over the families, whatever their yields.
const EXPLORATION: f64 = 0.3;
/// Seconds after which a yield counts half: the yields follow the campaign's recent past.
const HALF_LIFE_SECONDS: f64 = 900.0;
/// What every family is credited with before it yields anything: a finding's worth over
/// ten minutes, so that no family is written off by its first minutes.
const PRIOR_REWARD: f64 = 0.1 * FINDING_REWARD;
const PRIOR_SECONDS: f64 = 60.0;

/// One family's proposals and what they brought.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FamilyYield {
    pub proposals: u64,
    /// Wall seconds of its proposals (mutation, compilations, runs, judging) and of its draws
    /// that found no move.
    pub seconds: f64,
    pub findings: u64,
    pub novelty: u64,
    /// Reward and seconds, discounted by their age.
    recent_reward: f64,
    recent_seconds: f64,
}

impl FamilyYield {
    fn rate(&self) -> f64 {
        (self.recent_reward + PRIOR_REWARD) / (self.recent_seconds + PRIOR_SECONDS)
    }
}

/// Every family's yield, as state metadata.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FamilyYields {
    pub by_family: BTreeMap<String, FamilyYield>,
}
impl_serdeany!(FamilyYields);

fn key(family: Family) -> String {
    format!("{family:?}").to_lowercase()
}

/// The entry of fresh seeds (their making and first execution) beside the families'.
const SEEDS: &str = "seeds";

impl FamilyYields {
    /// A proposal of `family` that took `seconds` and brought `findings` new findings. Time
    /// passes for every family: the others' recent yields age with it.
    pub fn record_proposal(&mut self, family: Family, seconds: f64, findings: u64) {
        self.record_program(&key(family), seconds, findings, 0);
    }

    /// A fresh seed that took `seconds` to make and execute, and brought `findings` new
    /// findings and `novelty` novel entries.
    pub fn record_seed(&mut self, seconds: f64, findings: u64, novelty: u64) {
        self.record_program(SEEDS, seconds, findings, novelty);
    }

    /// Seconds spent on trying to make a seed that did not come (a generator that failed).
    pub fn record_seed_seconds(&mut self, seconds: f64) {
        self.record_seconds_of(SEEDS, seconds);
    }

    /// Whether a fresh seed was recorded yet.
    pub fn has_seeds(&self) -> bool {
        self.by_family.get(SEEDS).is_some_and(|seeds| seeds.proposals > 0)
    }

    fn record_program(&mut self, source: &str, seconds: f64, findings: u64, novelty: u64) {
        self.record_seconds_of(source, seconds);
        let entry = self.by_family.entry(source.to_string()).or_default();
        entry.proposals += 1;
        entry.findings += findings;
        entry.novelty += novelty;
        entry.recent_reward += findings as f64 * FINDING_REWARD + novelty as f64 * NOVELTY_REWARD;
    }

    /// Seconds `family` spent, with or without a proposal to show for them (a draw that found
    /// no move).
    pub fn record_seconds(&mut self, family: Family, seconds: f64) {
        self.record_seconds_of(&key(family), seconds);
    }

    fn record_seconds_of(&mut self, source: &str, seconds: f64) {
        let decay = 0.5f64.powf(seconds / HALF_LIFE_SECONDS);
        for other in self.by_family.values_mut() {
            other.recent_reward *= decay;
            other.recent_seconds *= decay;
        }
        let entry = self.by_family.entry(source.to_string()).or_default();
        entry.seconds += seconds;
        entry.recent_seconds += seconds;
    }

    /// The share of a client's time fresh seeds should take: [`EXPLORATION`] of it split
    /// evenly between seeds and variants, the rest in proportion to the recent yield per second
    /// of seeds against that of all families together.
    pub fn seed_share(&self) -> f64 {
        let seeds = self.by_family.get(SEEDS).cloned().unwrap_or_default().rate();
        let (reward, seconds) = self
            .by_family
            .iter()
            .filter(|(source, _)| *source != SEEDS)
            .fold((0.0, 0.0), |(r, s), (_, y)| (r + y.recent_reward, s + y.recent_seconds));
        let variants = (reward + PRIOR_REWARD) / (seconds + PRIOR_SECONDS);
        EXPLORATION / 2.0 + (1.0 - EXPLORATION) * seeds / (seeds + variants)
    }

    /// Novel coverage entries and counters a proposal of `family` set.
    pub fn record_novelty(&mut self, family: Family, entries: u64) {
        let entry = self.by_family.entry(key(family)).or_default();
        entry.novelty += entries;
        entry.recent_reward += entries as f64 * NOVELTY_REWARD;
    }

    /// Each family's probability of being drawn: [`EXPLORATION`] of it evenly, the rest in
    /// proportion to the families' recent yields per second.
    pub fn weights(&self, families: &[Family]) -> Vec<f64> {
        let rates: Vec<f64> = families
            .iter()
            .map(|f| self.by_family.get(&key(*f)).cloned().unwrap_or_default().rate())
            .collect();
        let total: f64 = rates.iter().sum();
        let even = 1.0 / families.len() as f64;
        rates
            .iter()
            .map(|rate| EXPLORATION * even + (1.0 - EXPLORATION) * rate / total)
            .collect()
    }

    /// A family drawn by [`FamilyYields::weights`].
    pub fn draw(&self, families: &[Family], rand: &mut impl Rand) -> Option<Family> {
        let weights = self.weights(families);
        let mut left = rand.next_float() * weights.iter().sum::<f64>();
        for (family, weight) in families.iter().zip(&weights) {
            if left < *weight {
                return Some(*family);
            }
            left -= weight;
        }
        families.last().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use libafl_bolts::rands::StdRand;

    const ALL: [Family; 3] = [Family::Athena, Family::Hermes, Family::Orion];

    #[test]
    fn without_yields_every_family_is_as_likely() {
        let weights = FamilyYields::default().weights(&ALL);
        assert!(weights.iter().all(|w| (w - 1.0 / 3.0).abs() < 1e-12), "{weights:?}");
    }

    #[test]
    fn the_family_that_finds_is_drawn_more_and_the_others_keep_their_floor() {
        let mut yields = FamilyYields::default();
        for _ in 0..600 {
            for family in ALL {
                yields.record_proposal(family, 0.1, 0);
            }
        }
        yields.record_proposal(Family::Hermes, 0.1, 2);
        let weights = yields.weights(&ALL);
        assert!(weights[1] > 0.6, "{weights:?}");
        assert!(
            weights[0] >= EXPLORATION / 3.0 && weights[2] >= EXPLORATION / 3.0,
            "{weights:?}"
        );
        assert!((weights.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        let mut rand = StdRand::with_seed(7);
        let hermes = (0..10_000)
            .filter(|_| yields.draw(&ALL, &mut rand) == Some(Family::Hermes))
            .count();
        assert!(
            (hermes as f64 / 10_000.0 - weights[1]).abs() < 0.02,
            "{hermes} {weights:?}"
        );
        assert_eq!(yields.by_family["hermes"].findings, 2);
        assert_eq!(yields.by_family["hermes"].proposals, 601);
    }

    #[test]
    fn novelty_counts_and_old_yields_fade() {
        let mut yields = FamilyYields::default();
        yields.record_proposal(Family::Orion, 1.0, 0);
        yields.record_novelty(Family::Orion, 300);
        let early = yields.weights(&ALL);
        assert!(early[2] > 0.6, "{early:?}");
        // Two hours of proposals by all three that bring nothing: Orion's yield has aged.
        for _ in 0..4800 {
            for family in ALL {
                yields.record_proposal(family, 0.5, 0);
            }
        }
        let late = yields.weights(&ALL);
        assert!(late[2] < early[2] && late[2] < 0.45, "{late:?}");
        assert_eq!(yields.by_family["orion"].novelty, 300);
    }

    #[test]
    fn fresh_seeds_take_the_time_their_yield_earns_against_the_variants() {
        let mut yields = FamilyYields::default();
        assert!((yields.seed_share() - 0.5).abs() < 1e-12);
        // Seeds that find, at a tenth of the variants' pace, and variants that find nothing.
        for round in 0..200 {
            yields.record_seed(5.0, u64::from(round % 4 == 0), 0);
            for _ in 0..50 {
                yields.record_proposal(Family::Hermes, 0.1, 0);
            }
        }
        let seeds_paying = yields.seed_share();
        assert!(
            seeds_paying > 0.8 && seeds_paying < 1.0 - EXPLORATION / 2.0 + 1e-9,
            "{seeds_paying}"
        );
        // Then the variants find and the seeds stop: within an hour the share turns.
        for round in 0..200 {
            yields.record_seed(5.0, 0, 0);
            for _ in 0..50 {
                yields.record_proposal(Family::Athena, 0.1, u64::from(round % 4 == 0));
            }
        }
        let variants_paying = yields.seed_share();
        assert!((EXPLORATION / 2.0..0.2).contains(&variants_paying), "{variants_paying}");
        assert_eq!(yields.by_family[SEEDS].proposals, 400);
        assert_eq!(yields.by_family[SEEDS].findings, 50);
        // Seeds are no family: the families' draw ignores them.
        let weights = yields.weights(&ALL);
        assert!((weights.iter().sum::<f64>() - 1.0).abs() < 1e-9 && weights[0] > weights[1]);
    }
}
