//! `ccfuzz generate orange`: Orange programs written as C files, each with the output it must
//! print, and a summary of their sizes and of the undefined behaviour removed.

use anyhow::{Context, Result};
use ccfuzz_orange::{generate, GenOptions, Policies};
use clap::{Args, Subcommand, ValueEnum};
use libafl_bolts::rands::StdRand;
use std::path::{Path, PathBuf};

#[derive(Subcommand)]
pub enum GeneratorCommand {
    /// Orange3 arithmetic programs with YARPGen's generation policies: each checks its own
    /// expected values and prints a checksum (`orange-N.c`, and `orange-N.expected`).
    Orange(OrangeArgs),
}

impl GeneratorCommand {
    pub fn run(self) -> Result<()> {
        match self {
            GeneratorCommand::Orange(args) => args.run(),
        }
    }
}

#[derive(Args)]
pub struct OrangeArgs {
    #[arg(short = 'n', long, default_value_t = 10)]
    pub count: usize,
    #[arg(long)]
    pub out: PathBuf,
    /// Random seed of the generator.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Operators per program are drawn log-uniformly from --min-operators to this.
    #[arg(long, default_value_t = 10_000)]
    pub max_operators: usize,
    #[arg(long, default_value_t = 1)]
    pub min_operators: usize,
    /// The generation policies on (`none` for plain Orange3).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "contexts,constants,subexpressions,shuffle"
    )]
    pub policies: Vec<PolicyName>,
    /// Turn off every generation policy (the same as `--policies none`).
    #[arg(long)]
    pub no_policies: bool,
    /// Floating-point variables and expressions, restricted to exact integer values.
    #[arg(long)]
    pub float: bool,
}

impl OrangeArgs {
    fn run(self) -> Result<()> {
        let options = GenOptions {
            min_operators: self.min_operators,
            max_operators: self.max_operators,
            policies: if self.no_policies {
                Policies::NONE
            } else {
                policies(&self.policies)
            },
            float: self.float,
        };
        write_orange(self.count, &self.out, self.seed, options)
    }
}

/// YARPGen's generation policies, by name.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyName {
    /// Operator contexts on random sub-trees.
    Contexts,
    /// Constant leaves and the buffer of reused constants.
    Constants,
    /// The buffer of reused sub-expressions.
    Subexpressions,
    /// Distributions drawn anew for each program.
    Shuffle,
    /// No policy at all (plain Orange3).
    None,
}

pub fn policies(names: &[PolicyName]) -> Policies {
    Policies {
        contexts: names.contains(&PolicyName::Contexts),
        constants: names.contains(&PolicyName::Constants),
        common_subexpressions: names.contains(&PolicyName::Subexpressions),
        shuffle: names.contains(&PolicyName::Shuffle),
    }
}

/// Writes `count` programs `orange-NNNNN.c` (and `.expected`, their output) into `out`.
pub fn write_orange(count: usize, out: &Path, random_seed: u64, options: GenOptions) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut rand = StdRand::with_seed(random_seed);
    let (mut operators, mut inserted, mut flipped) = (0usize, 0usize, 0usize);
    for n in 0..count {
        let program = generate(options, &mut rand);
        operators += program.size();
        inserted += program.inserted;
        flipped += program.flipped;
        let stem = out.join(format!("orange-{n:05}"));
        std::fs::write(stem.with_extension("c"), program.to_c())?;
        std::fs::write(stem.with_extension("expected"), program.expected_output())?;
    }
    let generated = operators.saturating_sub(inserted);
    println!(
        "wrote {count} programs to {}: {operators} operators, {inserted} inserted and {flipped} flipped to remove undefined behaviour ({:.2}% extra operations)",
        out.display(),
        100.0 * inserted as f64 / generated.max(1) as f64
    );
    Ok(())
}
