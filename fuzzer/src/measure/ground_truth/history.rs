//! A compiler's git history as a line of buildable compilers: the first-parent commits from
//! one revision to another, each built on demand into a cache keyed by its commit hash, so
//! that a commit is built once across findings, runs and invocations. A commit that does not
//! build is remembered as such and skipped by bisection. Two compilers are known, told apart
//! by the tree at the first revision: TinyCC (`./configure && make tcc libtcc1.a`) and pcc
//! (`./configure && make && make -k install`, with the runtime and headers of Debian's
//! `libpcc-dev`, which pcc keeps in a repository of its own).

use anyhow::{bail, Context, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// One commit of the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Commit {
    pub hash: String,
    pub subject: String,
}

/// The compilers whose histories can be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompilerKind {
    TinyCC,
    Pcc,
}

impl CompilerKind {
    pub fn name(self) -> &'static str {
        match self {
            CompilerKind::TinyCC => "TinyCC",
            CompilerKind::Pcc => "pcc",
        }
    }

    /// The file a finished build has, relative to its directory.
    fn built_file(self) -> &'static str {
        match self {
            CompilerKind::TinyCC => "tcc",
            CompilerKind::Pcc => "bin/pcc",
        }
    }
}

/// How a commit's compiler is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instrumentation {
    /// By the system's C compiler: the compiler a campaign tests and bisection probes.
    None,
    /// By AFL++'s `afl-clang-fast`: its edges are a campaign's compiler coverage. Cached apart,
    /// as `<hash>-afl`.
    Afl,
}

/// Where Debian's `libpcc-dev` keeps pcc's runtime and headers.
const DEBIAN_PCC_LIBS: &str = "/usr/lib/pcc";

/// A built compiler with the options every run of it takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Build {
    pub dir: PathBuf,
    kind: CompilerKind,
    options: String,
}

impl Build {
    /// The compiler's command line, as a campaign configuration writes it: TinyCC as
    /// `tcc -B<dir> -I<dir>/include`, pcc as its installed driver.
    pub fn command_line(&self) -> String {
        let dir = self.dir.display();
        let compiler = match self.kind {
            CompilerKind::TinyCC => format!("{dir}/tcc -B{dir} -I{dir}/include"),
            CompilerKind::Pcc => format!("{dir}/bin/pcc"),
        };
        format!("{compiler} {}", self.options).trim_end().to_string()
    }
}

/// The commits between `--from` and `--to` and their cached builds.
pub struct History {
    git: PathBuf,
    cache: PathBuf,
    jobs: usize,
    pub kind: CompilerKind,
    /// Options every build is run with (`-O`).
    options: String,
    /// `from` first, then every first-parent commit up to `to`, oldest first.
    pub commits: Vec<Commit>,
    built: Mutex<HashMap<String, Option<Build>>>,
}

fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .with_context(|| format!("cannot run git in {}", dir.display()))?;
    if !output.status.success() {
        bail!(
            "git {} in {} failed: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

impl History {
    /// The history of the repository `git` (a work tree or a bare directory) from `from` to
    /// `to`, which must descend from `from`; builds go to `cache/<hash>` and run with
    /// `options`.
    pub fn open(git_dir: &Path, from: &str, to: &str, cache: &Path, jobs: usize, options: &str) -> Result<Self> {
        let resolve = |rev: &str| git(git_dir, &["rev-parse", "--verify", &format!("{rev}^{{commit}}")]);
        let (from_hash, to_hash) = (resolve(from)?, resolve(to)?);
        let has = |path: &str| git(git_dir, &["cat-file", "-e", &format!("{from_hash}:{path}")]).is_ok();
        let kind = if has("tccgen.c") {
            CompilerKind::TinyCC
        } else if has("mip/pass2.h") {
            CompilerKind::Pcc
        } else {
            bail!(
                "{} at {from} is neither TinyCC (tccgen.c) nor pcc (mip/pass2.h)",
                git_dir.display()
            );
        };
        if Command::new("git")
            .arg("-C")
            .arg(git_dir)
            .args(["merge-base", "--is-ancestor", &from_hash, &to_hash])
            .status()
            .context("cannot run git")?
            .code()
            != Some(0)
        {
            bail!("--to {to} does not descend from --from {from}");
        }
        let range = format!("{from_hash}..{to_hash}");
        let listed = git(
            git_dir,
            &["log", "--first-parent", "--reverse", "--format=%H %s", &range],
        )?;
        let subject = git(git_dir, &["log", "-1", "--format=%s", &from_hash])?;
        let mut commits = vec![Commit {
            hash: from_hash,
            subject,
        }];
        commits.extend(listed.lines().map(|line| {
            let (hash, subject) = line.split_once(' ').unwrap_or((line, ""));
            Commit {
                hash: hash.to_string(),
                subject: subject.to_string(),
            }
        }));
        std::fs::create_dir_all(cache).with_context(|| format!("cannot create {}", cache.display()))?;
        Ok(History {
            git: git_dir.to_path_buf(),
            cache: cache.canonicalize()?,
            jobs: jobs.max(1),
            kind,
            options: options.trim().to_string(),
            commits,
            built: Mutex::new(HashMap::new()),
        })
    }

    /// The position of a commit (any revision git resolves) in the history, if it is there.
    pub fn position(&self, rev: &str) -> Option<usize> {
        let hash = git(&self.git, &["rev-parse", "--verify", &format!("{rev}^{{commit}}")]).ok()?;
        self.commits.iter().position(|c| c.hash == hash)
    }

    /// The compiler of commit `index`, built now if it is not cached; `None` when it does not
    /// build (its log stays beside the cache as `<hash>.failed`).
    pub fn build(&self, index: usize) -> Result<Option<Build>> {
        self.build_with(index, Instrumentation::None)
    }

    /// The compiler of commit `index` built with `instrumentation`, as [`History::build`].
    pub fn build_with(&self, index: usize, instrumentation: Instrumentation) -> Result<Option<Build>> {
        let hash = &self.commits[index].hash;
        let key = match instrumentation {
            Instrumentation::None => hash.clone(),
            Instrumentation::Afl => format!("{hash}-afl"),
        };
        if let Some(known) = self.built.lock().expect("build cache lock").get(&key) {
            return Ok(known.clone());
        }
        let build = self.build_uncached(hash, &key, instrumentation)?;
        self.built.lock().expect("build cache lock").insert(key, build.clone());
        Ok(build)
    }

    fn build_uncached(&self, hash: &str, key: &str, instrumentation: Instrumentation) -> Result<Option<Build>> {
        let dir = self.cache.join(key);
        let failed = self.cache.join(format!("{key}.failed"));
        let build = |dir: PathBuf| Build {
            dir,
            kind: self.kind,
            options: self.options.clone(),
        };
        if dir.join(self.kind.built_file()).is_file() {
            return Ok(Some(build(dir)));
        }
        if failed.is_file() {
            return Ok(None);
        }
        let staging = self.cache.join(format!(".{key}.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging)?;
        log::info!(
            "building {} at {hash}{}",
            self.kind.name(),
            if instrumentation == Instrumentation::Afl {
                " with afl-clang-fast"
            } else {
                ""
            }
        );
        let cc = match instrumentation {
            Instrumentation::None => None,
            Instrumentation::Afl => Some("afl-clang-fast"),
        };
        let result = self.extract(hash, &staging).and_then(|()| match self.kind {
            CompilerKind::TinyCC => self.configure_and_make(&staging, cc),
            CompilerKind::Pcc => self.build_pcc(&staging, &dir, cc),
        });
        match result {
            Ok(None) => {
                match self.kind {
                    // Objects are rebuilt by no one: only the compiler, its runtime and
                    // headers stay.
                    CompilerKind::TinyCC => {
                        for entry in std::fs::read_dir(&staging)?.flatten() {
                            if entry.path().extension().is_some_and(|e| e == "o") {
                                std::fs::remove_file(entry.path())?;
                            }
                        }
                        std::fs::rename(&staging, &dir)
                    }
                    // Installed under its final path inside the staging directory.
                    CompilerKind::Pcc => std::fs::rename(staged_install(&staging, &dir), &dir)
                        .and_then(|()| std::fs::remove_dir_all(&staging)),
                }
                .with_context(|| format!("cannot store {}", dir.display()))?;
                Ok(Some(build(dir)))
            }
            Ok(Some(log)) => {
                log::info!("{} at {hash} does not build: skipped", self.kind.name());
                std::fs::write(&failed, log)?;
                std::fs::remove_dir_all(&staging)?;
                Ok(None)
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&staging);
                Err(e)
            }
        }
    }

    /// The compiler's own execution tests at commit `index` (TinyCC's `tests/tests2`, each
    /// `X.c` with the `X.expect` it must print), written into `dir` afresh; how many.
    pub fn extract_tests(&self, index: usize, dir: &Path) -> Result<usize> {
        const SUITE: &str = "tests/tests2";
        if self.kind != CompilerKind::TinyCC {
            bail!(
                "{} has no execution test suite in its history (test-suite=from is TinyCC's)",
                self.kind.name()
            );
        }
        let staging = dir.with_extension("extracting");
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging)?;
        self.extract_paths(&self.commits[index].hash, &staging, &[SUITE])?;
        let _ = std::fs::remove_dir_all(dir);
        std::fs::rename(staging.join(SUITE), dir)
            .with_context(|| format!("cannot move the tests into {}", dir.display()))?;
        std::fs::remove_dir_all(&staging)?;
        let tests = std::fs::read_dir(dir)?
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "c"))
            .count();
        Ok(tests)
    }

    /// The commit's tree, written into `dir` by `git archive`.
    fn extract(&self, hash: &str, dir: &Path) -> Result<()> {
        self.extract_paths(hash, dir, &[])
    }

    /// The commit's `paths` (all of its tree when empty), written into `dir` by `git archive`.
    fn extract_paths(&self, hash: &str, dir: &Path, paths: &[&str]) -> Result<()> {
        let mut archive = Command::new("git")
            .arg("-C")
            .arg(&self.git)
            .args(["archive", "--format=tar", hash])
            .args(paths)
            .stdout(Stdio::piped())
            .spawn()
            .context("cannot run git archive")?;
        let tar = Command::new("tar")
            .arg("-x")
            .arg("-C")
            .arg(dir)
            .stdin(archive.stdout.take().expect("piped stdout"))
            .status()
            .context("cannot run tar")?;
        if !archive.wait()?.success() || !tar.success() {
            bail!("cannot extract {hash} from {}", self.git.display());
        }
        Ok(())
    }

    /// Configures and makes the compiler in `dir`: `None` when it built, else the build's log.
    /// A runtime that fails with its bounds checker (0.9.27's does not compile against
    /// today's glibc) is made again without it; no campaign option uses `-b`. `cc` replaces
    /// the system's C compiler.
    fn configure_and_make(&self, dir: &Path, cc: Option<&str>) -> Result<Option<String>> {
        let triplet = Command::new("gcc")
            .arg("-print-multiarch")
            .output()
            .context("cannot run gcc -print-multiarch")?;
        let triplet = String::from_utf8_lossy(&triplet.stdout).trim().to_string();
        let mut steps = BuildSteps::new(dir, &[]);
        let mut configure_args: Vec<String> = if triplet.is_empty() {
            Vec::new()
        } else {
            vec![format!("--triplet={triplet}")]
        };
        configure_args.extend(cc.map(|cc| format!("--cc={cc}")));
        if !steps.run("./configure", &configure_args)? {
            return Ok(Some(steps.log));
        }
        let make = |extra: &[&str]| -> Vec<String> {
            let mut args = vec![format!("-j{}", self.jobs), "tcc".into(), "libtcc1.a".into()];
            args.extend(extra.iter().map(|s| s.to_string()));
            args
        };
        let built = steps.run("make", &make(&[]))? || steps.run("make", &make(&["BCHECK_O="]))?;
        let complete = dir.join("tcc").is_file() && dir.join("libtcc1.a").is_file();
        Ok((!(built && complete)).then_some(steps.log))
    }

    /// Builds pcc in `dir`, configured for `prefix` and installed under it inside `dir` (see
    /// [`staged_install`]): `None` when its driver, preprocessor and compiler are there, else
    /// the build's log. It is built with
    /// `-fcommon`, which older sources need with today's gcc; its runtime and headers are
    /// linked from Debian's `libpcc-dev`. `cc` replaces the system's C compiler.
    fn build_pcc(&self, dir: &Path, prefix: &Path, cc: Option<&str>) -> Result<Option<String>> {
        let mut env = vec![("CFLAGS", "-g -O2 -fcommon")];
        env.extend(cc.map(|cc| ("CC", cc)));
        let mut steps = BuildSteps::new(dir, &env);
        let install = staged_install(dir, prefix);
        let built = steps.run("./configure", &[format!("--prefix={}", prefix.display())])?
            && steps.run("make", &[format!("-j{}", self.jobs)])?;
        // `-k`: some snapshots fail to install a part no C compile uses (the 2022 one, `cc2`),
        // and stop before the driver. What a compile needs is checked after.
        let destdir = format!("DESTDIR={}", dir.join(STAGED).display());
        let installed = built && {
            steps.run("make", &["-k".into(), "install".into(), destdir])?;
            ["bin/pcc", "libexec/ccom", "libexec/cpp"]
                .iter()
                .all(|part| install.join(part).is_file())
        };
        if !installed {
            return Ok(Some(steps.log));
        }
        link_debian_pcc_libs(&install)?;
        Ok(None)
    }
}

/// A build's steps, run in its directory; what they print is gathered for the log of a
/// commit that does not build.
struct BuildSteps<'a> {
    dir: &'a Path,
    env: &'a [(&'a str, &'a str)],
    log: String,
}

impl<'a> BuildSteps<'a> {
    fn new(dir: &'a Path, env: &'a [(&'a str, &'a str)]) -> Self {
        BuildSteps {
            dir,
            env,
            log: String::new(),
        }
    }

    /// Runs one step; whether it succeeded.
    fn run(&mut self, program: &str, args: &[String]) -> Result<bool> {
        let output = Command::new(program)
            .args(args)
            .current_dir(self.dir)
            .envs(self.env.iter().copied())
            .output()
            .with_context(|| format!("cannot run {program} in {}", self.dir.display()))?;
        self.log.push_str(&format!("$ {program} {}\n", args.join(" ")));
        self.log.push_str(&String::from_utf8_lossy(&output.stdout));
        self.log.push_str(&String::from_utf8_lossy(&output.stderr));
        Ok(output.status.success())
    }
}

/// The folder of a pcc build's staging directory its `make install` writes into.
const STAGED: &str = "installed";

/// Where `make install DESTDIR=<staging>/installed` puts a pcc configured for `prefix`.
fn staged_install(staging: &Path, prefix: &Path) -> PathBuf {
    staging.join(STAGED).join(prefix.strip_prefix("/").unwrap_or(prefix))
}

/// Links every file of Debian's pcc runtime and headers that the installed pcc (under
/// `install`) lacks into the directories its driver searches: `lib/pcc/<target>/<version>/`.
fn link_debian_pcc_libs(install: &Path) -> Result<()> {
    let debian = std::fs::read_dir(DEBIAN_PCC_LIBS)
        .with_context(|| format!("no {DEBIAN_PCC_LIBS}: install Debian's libpcc-dev"))?
        .flatten()
        .flat_map(|target| std::fs::read_dir(target.path()).into_iter().flatten().flatten())
        .map(|version| version.path())
        .next()
        .with_context(|| format!("{DEBIAN_PCC_LIBS} holds no <target>/<version>/"))?;
    let own = std::fs::read_dir(install.join("lib/pcc"))
        .with_context(|| format!("pcc installed no {}", install.join("lib/pcc").display()))?
        .flatten()
        .flat_map(|target| std::fs::read_dir(target.path()).into_iter().flatten().flatten())
        .map(|version| version.path());
    for version in own {
        for part in ["include", "lib"] {
            let into = version.join(part);
            std::fs::create_dir_all(&into)?;
            for file in std::fs::read_dir(debian.join(part))?.flatten() {
                let link = into.join(file.file_name());
                if !link.exists() {
                    std::os::unix::fs::symlink(file.path(), &link)
                        .with_context(|| format!("cannot link {}", link.display()))?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_in(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn the_test_suite_is_taken_as_it_was_at_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("tinycc");
        std::fs::create_dir_all(repo.join("tests/tests2")).unwrap();
        std::fs::write(repo.join("tccgen.c"), "").unwrap();
        std::fs::write(repo.join("tests/tests2/00_old.c"), "int main(void) { return 0; }\n").unwrap();
        std::fs::write(repo.join("tests/tests2/00_old.expect"), "").unwrap();
        git_in(&repo, &["init", "-q"]);
        git_in(&repo, &["add", "-A"]);
        git_in(&repo, &["commit", "-q", "-m", "old"]);
        std::fs::write(repo.join("tests/tests2/01_new.c"), "int main(void) { return 1; }\n").unwrap();
        git_in(&repo, &["add", "-A"]);
        git_in(&repo, &["commit", "-q", "-m", "a test that holds an answer"]);
        let history = History::open(&repo, "HEAD~1", "HEAD", &dir.path().join("cache"), 1, "").unwrap();
        let suite = dir.path().join("suite");
        std::fs::create_dir_all(&suite).unwrap();
        std::fs::write(suite.join("stale.c"), "").unwrap();
        assert_eq!(history.extract_tests(0, &suite).unwrap(), 1);
        let mut names: Vec<String> = std::fs::read_dir(&suite)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["00_old.c", "00_old.expect"]);
        assert_eq!(history.extract_tests(1, &suite).unwrap(), 2);
    }
}
