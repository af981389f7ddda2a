//! Statistics of the experiments: means, standard deviations, Welch's two-sided t-test and
//! confidence intervals of a mean (Student's t).

/// Mean and sample standard deviation (0 for fewer than two values).
pub fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// Two-sided p-value of Welch's t-test that `a` and `b` have the same mean. Samples without
/// spread are equal (p = 1) or certainly different (p = 0).
pub fn welch_p(a: &[f64], b: &[f64]) -> f64 {
    let (ma, sa) = mean_sd(a);
    let (mb, sb) = mean_sd(b);
    let (va, vb) = (sa * sa / a.len() as f64, sb * sb / b.len() as f64);
    if va + vb == 0.0 {
        return if ma == mb { 1.0 } else { 0.0 };
    }
    let t = (ma - mb) / (va + vb).sqrt();
    let df = (va + vb).powi(2) / (va * va / (a.len() as f64 - 1.0) + vb * vb / (b.len() as f64 - 1.0));
    student_two_sided(t, df)
}

/// P(|T| > |t|) for Student's t with `df` degrees of freedom.
pub fn student_two_sided(t: f64, df: f64) -> f64 {
    incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// Half-width of the 95% confidence interval of the mean of `values`.
pub fn ci95(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return f64::NAN;
    }
    let (_, sd) = mean_sd(values);
    let df = values.len() as f64 - 1.0;
    // The quantile: bisection of the two-sided tail probability down to 5%.
    let (mut low, mut high) = (0.0, 1000.0);
    for _ in 0..200 {
        let mid = (low + high) / 2.0;
        if student_two_sided(mid, df) > 0.05 {
            low = mid;
        } else {
            high = mid;
        }
    }
    high * sd / (values.len() as f64).sqrt()
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine coefficients).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = C[0]
        + C[1..]
            .iter()
            .enumerate()
            .map(|(i, c)| c / (x + i as f64 + 1.0))
            .sum::<f64>();
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The regularized incomplete beta function I_x(a, b).
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The continued fraction converges fast on this side; the other side by symmetry.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function (modified Lentz evaluation).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    d = 1.0 / if d.abs() < TINY { TINY } else { d };
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        for coefficient in [even, odd] {
            d = 1.0 + coefficient * d;
            d = 1.0 / if d.abs() < TINY { TINY } else { d };
            c = 1.0 + coefficient / c;
            if c.abs() < TINY {
                c = TINY;
            }
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-14 {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_tails_match_tables() {
        // Two-sided 5% critical values: t(1) = 12.706, t(4) = 2.776, t(30) = 2.042.
        for (t, df) in [(12.706, 1.0), (2.776, 4.0), (2.042, 30.0)] {
            let p = student_two_sided(t, df);
            assert!((p - 0.05).abs() < 5e-4, "t={t} df={df}: p={p}");
        }
        assert!((student_two_sided(0.0, 5.0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn welch_separates_shifted_samples_only() {
        let a = [10.0, 11.0, 9.5, 10.5, 10.2];
        let b = [20.0, 21.0, 19.5, 20.5, 20.2];
        assert!(welch_p(&a, &b) < 1e-6);
        let c = [10.1, 10.9, 9.4, 10.6, 10.3];
        assert!(welch_p(&a, &c) > 0.5);
        // 95% interval of 1..=5: mean 3, sd 1.5811, t(4) = 2.776 → 1.963.
        assert!((ci95(&[1.0, 2.0, 3.0, 4.0, 5.0]) - 1.963).abs() < 1e-3);
    }
}
