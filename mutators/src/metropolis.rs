//! The Metropolis–Hastings acceptance rule of the chains: a proposal Q* from the state Q is
//! accepted with probability min(1, exp(σ·(E(Q*) − E(Q))) · q(Q|Q*) / q(Q*|Q)), so that the
//! chain samples states with probability proportional to exp(σ·E).

use libafl_bolts::rands::Rand;

/// The probability of accepting a proposal.
pub fn acceptance(energy_now: f64, energy_proposed: f64, log_q_ratio: f64, sigma: f64) -> f64 {
    let log_a = sigma * (energy_proposed - energy_now) + log_q_ratio;
    if log_a >= 0.0 {
        1.0
    } else {
        log_a.exp()
    }
}

pub fn accepts<R: Rand>(energy_now: f64, energy_proposed: f64, log_q_ratio: f64, sigma: f64, rand: &mut R) -> bool {
    let a = acceptance(energy_now, energy_proposed, log_q_ratio, sigma);
    a >= 1.0 || rand.next_float() < a
}

#[cfg(test)]
mod tests {
    use super::*;
    use libafl_bolts::rands::StdRand;

    /// A chain on a ring of states with known energies and a lopsided proposal (a step forward
    /// is likelier than a step back) visits each state as often as exp(σE)/Z says: Pearson's
    /// chi-square over thinned samples stays under the 99% quantile.
    #[test]
    fn visits_match_the_target_distribution() {
        let energies = [0.0, 1.5, -0.5, 2.0, 0.7, -1.2];
        let sigma = 0.8;
        let n = energies.len();
        let forward: f64 = 0.7;
        let mut rand = StdRand::with_seed(2026);
        let mut state = 0usize;
        let thinning = 50;
        let samples = 20_000;
        let mut visits = vec![0u64; n];
        for step in 0..samples * thinning {
            let (proposed, log_q_ratio) = if rand.next_float() < forward {
                ((state + 1) % n, ((1.0 - forward) / forward).ln())
            } else {
                ((state + n - 1) % n, (forward / (1.0 - forward)).ln())
            };
            if accepts(energies[state], energies[proposed], log_q_ratio, sigma, &mut rand) {
                state = proposed;
            }
            if step % thinning == 0 {
                visits[state] += 1;
            }
        }
        let weights: Vec<f64> = energies.iter().map(|e| (sigma * e).exp()).collect();
        let z: f64 = weights.iter().sum();
        let chi_square: f64 = weights
            .iter()
            .zip(&visits)
            .map(|(w, &observed)| {
                let expected = samples as f64 * w / z;
                (observed as f64 - expected).powi(2) / expected
            })
            .sum();
        // The 99% quantile of chi-square with 5 degrees of freedom.
        eprintln!("CHI {chi_square}");
        eprintln!("CHI {chi_square}");
        eprintln!("CHI {chi_square}");
        eprintln!("CHI {chi_square}");
        eprintln!("CHI {chi_square}");
        assert!(chi_square < 15.086, "chi-square {chi_square:.2}, visits {visits:?}");
    }

    #[test]
    fn better_states_are_always_accepted_and_worse_ones_sometimes() {
        assert_eq!(acceptance(0.0, 1.0, 0.0, 1.0), 1.0);
        let a = acceptance(1.0, 0.0, 0.0, 2.0);
        assert!((a - (-2.0f64).exp()).abs() < 1e-12);
        assert!((acceptance(0.0, 0.0, -1.0, 1.0) - (-1.0f64).exp()).abs() < 1e-12);
    }
}
