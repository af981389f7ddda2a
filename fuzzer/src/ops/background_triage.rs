//! A campaign's background triage: `ccfuzz triage OUT --watch` in its own process group at
//! the lowest priority, started and stopped with the campaign.

use anyhow::{Context, Result};
use std::path::Path;

/// `ccfuzz triage OUT --watch` started by a campaign: its own process group at the lowest
/// priority, so reductions take only idle CPU and stop with the campaign.
pub struct BackgroundTriage {
    child: std::process::Child,
    /// The campaign process that started it; forked clients must not stop it.
    owner: u32,
}

impl BackgroundTriage {
    pub fn start(out: &Path) -> Result<Self> {
        use std::os::unix::process::CommandExt;
        let exe = std::env::current_exe().context("cannot find the ccfuzz binary")?;
        let log = std::fs::File::create(out.join("triage.log")).context("cannot create triage.log")?;
        let child = std::process::Command::new("nice")
            .args(["-n", "19"])
            .arg(exe)
            .arg("triage")
            .arg(out)
            .arg("--config")
            .arg(out.join("configuration.toml"))
            .args(["--watch", "60"])
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()
            .context("cannot start background triage")?;
        log::info!(
            "background triage started (pid {}), log in {}",
            child.id(),
            out.join("triage.log").display()
        );
        Ok(BackgroundTriage {
            child,
            owner: std::process::id(),
        })
    }

    /// Stops the triage process and the reducers it started (its process group).
    pub fn stop(mut self) {
        if std::process::id() != self.owner {
            return;
        }
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}
