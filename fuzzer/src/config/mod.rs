//! The campaign configuration: which compiler configurations are tested, which one gives the
//! reference output, which ones vet seeds for undefined behaviour, and the time limits.
//! It is a TOML file the user edits; `ccfuzz config` prints the default for this machine.

pub mod installed;

use anyhow::{bail, Context, Result};
use ccfuzz_mutators::compiler_version::exact_version;
use installed::{which, Installed};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A compiler and its flags, written as one command line such as `gcc-12 -O2 -fno-tree-vrp`,
/// or as a table that also says what to observe inside the compiler:
/// `{ command = "build/tcc-afl/tcc -Bbuild/tcc-afl", coverage = "afl" }`,
/// `{ command = "gcc-12 -O2", counters = "gcc" }`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "ConfigEntry", into = "ConfigEntry")]
pub struct CompilerConfig {
    line: String,
    pub observe: Observe,
}

/// What is observed inside a compiler while it compiles a variant.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Observe {
    /// Which code of the compiler ran.
    pub coverage: Option<Coverage>,
    /// Which optimizations fired.
    pub counters: Option<CounterFamily>,
    /// AFL map entries to allocate when the driver's own map is smaller than its
    /// sub-processes' (an instrumented GCC's `cc1`); default: what the driver reports.
    pub map_size: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Coverage {
    /// Edges of a compiler built with AFL++ instrumentation, through a shared-memory map.
    Afl,
    /// Lines of a compiler built with `--coverage`, read with gcov after each compilation.
    Gcov,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CounterFamily {
    /// GCC statistics (`-fdump-statistics-stats`).
    Gcc,
    /// LLVM statistics when the build has them, optimization remarks otherwise.
    Llvm,
}

#[derive(Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
enum ConfigEntry {
    Line(String),
    Observed {
        command: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        coverage: Option<Coverage>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counters: Option<CounterFamily>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        map_size: Option<usize>,
    },
}

impl From<ConfigEntry> for CompilerConfig {
    fn from(entry: ConfigEntry) -> Self {
        match entry {
            ConfigEntry::Line(line) => CompilerConfig::new(line),
            ConfigEntry::Observed {
                command,
                coverage,
                counters,
                map_size,
            } => CompilerConfig {
                line: command,
                observe: Observe {
                    coverage,
                    counters,
                    map_size,
                },
            },
        }
    }
}

impl From<CompilerConfig> for ConfigEntry {
    fn from(config: CompilerConfig) -> Self {
        if config.observe == Observe::default() {
            ConfigEntry::Line(config.line)
        } else {
            ConfigEntry::Observed {
                command: config.line,
                coverage: config.observe.coverage,
                counters: config.observe.counters,
                map_size: config.observe.map_size,
            }
        }
    }
}

impl CompilerConfig {
    pub fn new(line: impl Into<String>) -> Self {
        CompilerConfig {
            line: line.into(),
            observe: Observe::default(),
        }
    }

    pub fn name(&self) -> &str {
        &self.line
    }

    pub fn argv(&self) -> Vec<String> {
        self.line.split_whitespace().map(str::to_string).collect()
    }

    /// The command that compiles `source` into `binary`, with `extra` flags after the configured ones.
    pub fn command(&self, source: &Path, binary: &Path, extra: &[&str]) -> Command {
        let argv = self.argv();
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .args(extra)
            .arg("-w")
            .arg(source)
            .arg("-o")
            .arg(binary)
            .arg("-lm");
        command
    }

    /// The command as a shell line, for reproduction scripts.
    pub fn shell_line(&self, source: &str, binary: &str) -> String {
        let mut words: Vec<String> = self.argv().iter().map(|w| shell_quote(w)).collect();
        words.extend([
            "-w".into(),
            shell_quote(source),
            "-o".into(),
            shell_quote(binary),
            "-lm".into(),
        ]);
        words.join(" ")
    }

    /// Whether `other` runs the same compiler program with the same flags (`gcc -O0` and
    /// `gcc-12 -O0` on Debian).
    pub fn same_command(&self, other: &CompilerConfig) -> bool {
        let (mine, theirs) = (self.argv(), other.argv());
        mine[1..] == theirs[1..]
            && (mine[0] == theirs[0]
                || installed::resolve(&mine[0]).is_some_and(|p| Some(p) == installed::resolve(&theirs[0])))
    }

    pub fn is_installed(&self) -> bool {
        self.argv().first().is_some_and(|program| which(program))
    }
}

pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=+:,".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Its output on a seed is the expected output of every variant. It must accept
    /// `--coverage` (a gcc), because profiling uses it.
    pub reference: CompilerConfig,
    /// A seed is rejected when any of these prints something other than the reference.
    pub ub_check: Vec<CompilerConfig>,
    /// The configurations under test.
    pub configurations: Vec<CompilerConfig>,
    /// Seconds a compilation may take before it counts as a hang.
    pub compile_timeout: f64,
    /// Seconds a seed may run during profiling. Every execution of a variant runs its binary
    /// once per configuration: a seed that runs for seconds would make its variants slow.
    pub seed_timeout: f64,
    /// Seconds a variant's binary may run (more than `seed_timeout`: the machine is loaded).
    pub run_timeout: f64,
    /// Directory of csmith's runtime headers.
    pub csmith_include: String,
    /// Extra arguments for csmith when it generates seeds.
    pub csmith_args: Vec<String>,
    /// Probability that an executed statement is a valuation-profiling point (Hermes's
    /// sparse profiling).
    #[serde(default = "default_p_profile")]
    pub p_profile: f64,
    /// Triage findings while the campaign runs, in a separate low-priority process
    /// (`ccfuzz triage OUT --watch`), so that fuzzing never waits for a reduction.
    #[serde(default)]
    pub background_triage: bool,
    /// When the reference compiles a variant.
    #[serde(default)]
    pub reference_gate: ReferenceGate,
    /// A known-bugs list (`ccfuzz_triage::known`, relative to the configuration file): triage
    /// counts their new findings apart and does not reduce them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_bugs: Option<std::path::PathBuf>,
}

/// When the validity gate's reference compiles a variant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReferenceGate {
    /// Before the tested configurations: every variant, and a reference that alone gets a
    /// variant wrong is a finding.
    #[default]
    First,
    /// Only when a tested configuration does not print the seed's output (the variant's
    /// validity is then decided as with `first`). Saves a compilation per variant when the
    /// reference is slower than the compilers under test (gcc against tcc and pcc), at the
    /// price of never testing the reference itself. Has no effect when the reference is also
    /// a tested configuration.
    OnDisagreement,
}

fn default_p_profile() -> f64 {
    0.1
}

/// The levels each tested gcc and clang runs at. Wrong code is born in the optimizers, in loop
/// and vector code above all, so -O0 (the reference's level, and GCC trunk's second slowest
/// with its RTL checking) gives way to -O3 with this CPU's own vector units (AVX-512 here).
const OPT_LEVELS: [&str; 5] = ["-O1", "-Os", "-O2", "-O3", "-O3 -march=native"];

/// The clang that vets seeds and builds the triage guard's sanitized binaries: the newest
/// one, other than the newest of all, that can (its sanitizer runtime is installed); the
/// newest of all when no other can.
fn vetting_clang(clangs: &[Installed]) -> Option<String> {
    let (newest, others) = clangs.split_last()?;
    let preference: Vec<&Installed> = others.iter().rev().chain(std::iter::once(newest)).collect();
    let chosen = preference
        .iter()
        .find(|clang| installed::builds_sanitized(&clang.program));
    if chosen.is_none() {
        log::warn!(
            "no clang builds binaries with {} (install libclang-rt-N-dev): the triage guard will reject every finding",
            installed::SANITIZER_FLAGS.join(" ")
        );
    }
    Some(chosen.unwrap_or(&preference[0]).program.clone())
}

impl Config {
    /// Whether some configuration observes compiler coverage or optimization counters.
    pub fn observes_maps(&self) -> bool {
        self.observes_coverage() || self.observes_counters()
    }

    /// Whether some configuration observes compiler coverage.
    pub fn observes_coverage(&self) -> bool {
        self.configurations.iter().any(|c| c.observe.coverage.is_some())
    }

    /// Whether some configuration reports optimization counters.
    pub fn observes_counters(&self) -> bool {
        self.configurations.iter().any(|c| c.observe.counters.is_some())
    }

    /// This machine's default: the newest installed gcc and clang, GCC trunk and clang-23 once
    /// `make deps` built the unstable root (with `all_versions`, every installed version), at
    /// [`OPT_LEVELS`], plus tcc (under 0.1% of the CPU; pcc too with `all_versions`). Seeds
    /// are vetted, and findings guarded, by the newest clang that builds sanitized binaries
    /// other than the newest clang, which the default tests: a compiler does not vet its own
    /// seeds.
    pub fn detect(all_versions: bool) -> Self {
        let gccs = installed::versions("gcc");
        let clangs = installed::versions("clang");
        let mut configurations = Vec::new();
        for family in [&gccs, &clangs] {
            let tested = if all_versions {
                &family[..]
            } else {
                &family[family.len().saturating_sub(1)..]
            };
            for compiler in tested {
                configurations.extend(
                    OPT_LEVELS
                        .iter()
                        .map(|o| CompilerConfig::new(format!("{} {o}", compiler.program))),
                );
            }
        }
        // pcc's known wrong-code bugs show on most Orange programs, each with an output of its
        // own, which the known-bugs filter cannot match cheaply: its findings would keep the
        // background triage from the trunk findings.
        let fast_compilers = if all_versions {
            &["tcc", "pcc"][..]
        } else {
            &["tcc"][..]
        };
        configurations.extend(
            fast_compilers
                .iter()
                .filter(|p| which(p))
                .map(|p| CompilerConfig::new(*p)),
        );
        Config {
            reference: CompilerConfig::new("gcc -O0"),
            ub_check: vetting_clang(&clangs)
                .map(|clang| CompilerConfig::new(format!("{clang} -O0")))
                .into_iter()
                .collect(),
            configurations,
            compile_timeout: 60.0,
            seed_timeout: 2.0,
            run_timeout: 10.0,
            csmith_include: "/usr/include/csmith".into(),
            csmith_args: vec!["--no-packed-struct".into()],
            p_profile: default_p_profile(),
            background_triage: false,
            reference_gate: ReferenceGate::First,
            known_bugs: None,
        }
    }

    /// The default configuration, checked: every compiler it names runs.
    pub fn detected(all_versions: bool) -> Result<Self> {
        let config = Config::detect(all_versions);
        config
            .validate()
            .context("the default configuration does not work here (pass --config)")?;
        Ok(config)
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let mut config: Config =
            toml::from_str(&text).with_context(|| format!("bad configuration {}", path.display()))?;
        // Absolute, so that the copy a campaign keeps in its directory names the same list.
        if let Some(list) = &config.known_bugs {
            let beside = path.parent().unwrap_or(Path::new(".")).join(list);
            config.known_bugs = Some(
                beside
                    .canonicalize()
                    .with_context(|| format!("no known-bugs list {} ({})", beside.display(), path.display()))?,
            );
        }
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<()> {
        if self.configurations.is_empty() {
            bail!("the configuration lists no compiler configurations to test");
        }
        for config in std::iter::once(&self.reference)
            .chain(&self.ub_check)
            .chain(&self.configurations)
        {
            if !config.is_installed() {
                bail!("compiler of configuration `{}` is not installed", config.name());
            }
        }
        if self
            .configurations
            .iter()
            .filter(|c| c.observe.coverage.is_some())
            .count()
            > 1
        {
            bail!(
                "at most one configuration may observe coverage (each instrumented compiler numbers its edges from 0)"
            );
        }
        if self.compile_timeout <= 0.0 || self.seed_timeout <= 0.0 || self.run_timeout <= 0.0 {
            bail!("timeouts must be positive");
        }
        Ok(())
    }

    /// The compilers a seed's values are profiled under: the reference, the UB checks, and each
    /// tested configuration with its optimization and target flags replaced by -O0, once per
    /// distinct command (evaluation order is a front-end choice, the same at every level and
    /// for every `-march`).
    pub fn profiling_compilers(&self) -> Vec<CompilerConfig> {
        let mut lines: Vec<String> = Vec::new();
        let all = std::iter::once(&self.reference)
            .chain(&self.ub_check)
            .chain(&self.configurations);
        for config in all {
            let mut argv: Vec<String> = config
                .argv()
                .into_iter()
                .filter(|w| !w.starts_with("-O") && !w.starts_with("-march="))
                .collect();
            argv.insert(1, "-O0".into());
            let line = argv.join(" ");
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
        lines.into_iter().map(CompilerConfig::new).collect()
    }

    pub fn compile_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.compile_timeout)
    }

    pub fn seed_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.seed_timeout)
    }

    pub fn run_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.run_timeout)
    }

    /// Comment lines with the exact version of every compiler the configuration runs, and the
    /// package versions of the Debian unstable roots that `make` built.
    pub fn versions_comment(&self) -> String {
        let mut programs: Vec<String> = Vec::new();
        let all = std::iter::once(&self.reference)
            .chain(&self.ub_check)
            .chain(&self.configurations);
        for program in all.filter_map(|config| config.argv().into_iter().next()) {
            if !programs.contains(&program) {
                programs.push(program);
            }
        }
        let mut text = String::from("# Compilers (the first line of their --version):\n");
        for program in programs {
            text.push_str(&format!("#   {program}: {}\n", exact_version(&program)));
        }
        for (root, versions) in installed::unstable_root_versions() {
            text.push_str(&format!("# Packages of the Debian unstable root {}:\n", root.display()));
            for line in versions.lines() {
                text.push_str(&format!("#   {}\n", line.replace('\t', " ")));
            }
        }
        text
    }

    /// The configuration as a commented TOML file.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string_pretty(self).expect("configuration serializes");
        format!(
            "# ccfuzz campaign configuration. Each configuration is a compiler command line; the\n\
             # variant, `-w`, `-o BINARY` and `-lm` are appended. Examples of what else can go in\n\
             # `configurations`: \"tcc\", \"pcc -O\", \"clang-14 -O2 -mllvm -enable-newgvn\",\n\
             # \"gcc-12 -O0 -funsigned-char\".\n{body}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_round_trips_through_toml() {
        let config = Config::detect(false);
        let parsed: Config = toml::from_str(&config.to_toml()).unwrap();
        assert_eq!(parsed, config);
    }

    #[test]
    fn values_are_profiled_once_per_compiler_command_at_o0() {
        let text = "reference = \"gcc-12 -O0\"\nub_check = [\"clang-19 -O0\"]\nconfigurations = [\"gcc-12 -O0\", \"gcc-12 -O3 -march=native\", \"clang-19 -Os -mllvm -enable-newgvn\", \"tcc -Bbuild/tcc-afl\", \"pcc\"]\ncompile_timeout = 1.0\nseed_timeout = 1.0\nrun_timeout = 1.0\ncsmith_include = \"\"\ncsmith_args = []\n";
        let config: Config = toml::from_str(text).unwrap();
        let lines: Vec<String> = config
            .profiling_compilers()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        assert_eq!(
            lines,
            [
                "gcc-12 -O0",
                "clang-19 -O0",
                "clang-19 -O0 -mllvm -enable-newgvn",
                "tcc -O0 -Bbuild/tcc-afl",
                "pcc -O0"
            ]
        );
    }

    #[test]
    fn observed_configurations_are_tables() {
        let text = "reference = \"gcc -O0\"\nub_check = []\nconfigurations = [\"gcc-12 -O0\", { command = \"build/tcc-afl/tcc -Bbuild/tcc-afl\", coverage = \"afl\" }, { command = \"gcc-12 -O2\", counters = \"gcc\" }]\ncompile_timeout = 1.0\nseed_timeout = 1.0\nrun_timeout = 1.0\ncsmith_include = \"\"\ncsmith_args = []\n";
        let config: Config = toml::from_str(text).unwrap();
        let [plain, tcc, gcc] = &config.configurations[..] else {
            panic!("{config:?}")
        };
        assert_eq!(
            (plain.name(), plain.observe.clone()),
            ("gcc-12 -O0", Observe::default())
        );
        assert_eq!(
            (tcc.name(), tcc.observe.coverage),
            ("build/tcc-afl/tcc -Bbuild/tcc-afl", Some(Coverage::Afl))
        );
        assert_eq!(gcc.observe.counters, Some(CounterFamily::Gcc));
        let parsed: Config = toml::from_str(&config.to_toml()).unwrap();
        assert_eq!(parsed, config);
        assert!(toml::from_str::<Config>(&text.replace("coverage = \"afl\"", "coverage = \"edges\"")).is_err());
        assert!(toml::from_str::<Config>(&text.replace("coverage = ", "covrage = ")).is_err());
    }

    #[test]
    fn shell_lines_quote_what_needs_it() {
        let c = CompilerConfig::new("clang-14 -O2 -mllvm -enable-newgvn");
        assert_eq!(
            c.shell_line("my file.c", "prog"),
            "clang-14 -O2 -mllvm -enable-newgvn -w 'my file.c' -o prog -lm"
        );
    }
}
