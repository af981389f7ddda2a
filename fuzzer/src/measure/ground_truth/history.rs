//! A TinyCC git history as a line of buildable compilers: the first-parent commits from one
//! revision to another, each built on demand (`./configure && make tcc libtcc1.a`) into a
//! cache keyed by its commit hash, so that a commit is built once across findings, runs and
//! invocations. A commit that does not build is remembered as such and skipped by bisection.

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

/// A built compiler: run as `tcc -B<dir> -I<dir>/include`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Build {
    pub dir: PathBuf,
}

impl Build {
    /// The compiler's command line, as a campaign configuration writes it.
    pub fn command_line(&self) -> String {
        let dir = self.dir.display();
        format!("{dir}/tcc -B{dir} -I{dir}/include")
    }
}

/// The commits between `--from` and `--to` and their cached builds.
pub struct History {
    git: PathBuf,
    cache: PathBuf,
    jobs: usize,
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
    /// `to`, which must descend from `from`; builds go to `cache/<hash>`.
    pub fn open(git_dir: &Path, from: &str, to: &str, cache: &Path, jobs: usize) -> Result<Self> {
        let resolve = |rev: &str| git(git_dir, &["rev-parse", "--verify", &format!("{rev}^{{commit}}")]);
        let (from_hash, to_hash) = (resolve(from)?, resolve(to)?);
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
        let hash = &self.commits[index].hash;
        if let Some(known) = self.built.lock().expect("build cache lock").get(hash) {
            return Ok(known.clone());
        }
        let build = self.build_uncached(hash)?;
        self.built
            .lock()
            .expect("build cache lock")
            .insert(hash.clone(), build.clone());
        Ok(build)
    }

    fn build_uncached(&self, hash: &str) -> Result<Option<Build>> {
        let dir = self.cache.join(hash);
        let failed = self.cache.join(format!("{hash}.failed"));
        if dir.join("tcc").is_file() {
            return Ok(Some(Build { dir }));
        }
        if failed.is_file() {
            return Ok(None);
        }
        let staging = self.cache.join(format!(".{hash}.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging)?;
        log::info!("building tcc at {hash}");
        let result = self
            .extract(hash, &staging)
            .and_then(|()| self.configure_and_make(&staging));
        match result {
            Ok(None) => {
                // Objects are rebuilt by no one: only the compiler, its runtime and headers stay.
                for entry in std::fs::read_dir(&staging)?.flatten() {
                    if entry.path().extension().is_some_and(|e| e == "o") {
                        std::fs::remove_file(entry.path())?;
                    }
                }
                std::fs::rename(&staging, &dir).with_context(|| format!("cannot store {}", dir.display()))?;
                Ok(Some(Build { dir }))
            }
            Ok(Some(log)) => {
                log::info!("tcc at {hash} does not build: skipped");
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

    /// The commit's tree, written into `dir` by `git archive`.
    fn extract(&self, hash: &str, dir: &Path) -> Result<()> {
        let mut archive = Command::new("git")
            .arg("-C")
            .arg(&self.git)
            .args(["archive", "--format=tar", hash])
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
    /// today's glibc) is made again without it; no campaign option uses `-b`.
    fn configure_and_make(&self, dir: &Path) -> Result<Option<String>> {
        let triplet = Command::new("gcc")
            .arg("-print-multiarch")
            .output()
            .context("cannot run gcc -print-multiarch")?;
        let triplet = String::from_utf8_lossy(&triplet.stdout).trim().to_string();
        let mut log = String::new();
        let mut step = |program: &str, args: &[String]| -> Result<bool> {
            let output = Command::new(program)
                .args(args)
                .current_dir(dir)
                .output()
                .with_context(|| format!("cannot run {program} in {}", dir.display()))?;
            log.push_str(&format!("$ {program} {}\n", args.join(" ")));
            log.push_str(&String::from_utf8_lossy(&output.stdout));
            log.push_str(&String::from_utf8_lossy(&output.stderr));
            Ok(output.status.success())
        };
        let configure_args: Vec<String> = if triplet.is_empty() {
            Vec::new()
        } else {
            vec![format!("--triplet={triplet}")]
        };
        if !step("./configure", &configure_args)? {
            return Ok(Some(log));
        }
        let make = |extra: &[&str]| -> Vec<String> {
            let mut args = vec![format!("-j{}", self.jobs), "tcc".into(), "libtcc1.a".into()];
            args.extend(extra.iter().map(|s| s.to_string()));
            args
        };
        let built = step("make", &make(&[]))? || step("make", &make(&["BCHECK_O="]))?;
        let complete = dir.join("tcc").is_file() && dir.join("libtcc1.a").is_file();
        Ok((!(built && complete)).then_some(log))
    }
}
