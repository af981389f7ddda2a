//! A campaign: LibAFL's `StdFuzzer` on every requested core under the `Launcher` (LLMP), an
//! on-disk corpus of variants, findings on disk, seeds from csmith, Orange or a directory, resumable
//! from its output directory.
//!
//! Output directory layout: `seeds/` (the seed store), `corpus/` (variants, postcard),
//! `findings/` (one directory per finding, LibAFL's solutions corpus),
//! `tmp/` (per-client scratch, removed at start and when the campaign stops; in `/dev/shm` when
//! it has room), `stats.json` (monitor).

use crate::campaign::broker::{choose_port, Broker};
use crate::campaign::client::{client, now_secs};
use crate::campaign::manager::ConfiguredManager;
use crate::campaign::options::{CampaignOptions, CampaignState, SeedSource};
use crate::campaign::scratch;
use crate::exec::instrument::Instruments;
use crate::ops::shutdown;
use crate::ops::status::StatusMonitor;
use crate::seeds::profile_directory;
use anyhow::{Context, Result};
use ccfuzz_mutators::input::Variant;
use libafl::events::{ClientDescription, EventConfig, Launcher, LlmpRestartingEventManager};
use libafl::monitors::{NopMonitor, OnDiskJsonAggregateMonitor};
use libafl::Error;
use libafl_bolts::core_affinity::Cores;
use libafl_bolts::shmem::{ShMemProvider, StdShMem, StdShMemProvider};
use std::num::NonZeroUsize;
use std::time::{Duration, SystemTime};

/// Runs the campaign to its end (or forever).
pub fn run_campaign(mut options: CampaignOptions) -> Result<()> {
    // A new directory gets this format's version; a resumed one must have it.
    crate::ops::format_version::claim(&options.out, "campaign")?;
    let started = SystemTime::now();
    shutdown::share_stop_flag()?;
    shutdown::handle_stop_signals()?;
    let cores =
        Cores::from_cmdline(&options.cores).map_err(|e| anyhow::anyhow!("bad --cores {}: {e}", options.cores))?;
    if options.scratch_root.is_none() && !options.scratch_on_disk {
        options.scratch_root = scratch::shared_memory_root(cores.ids.len());
    }
    let broker_port = choose_port(options.broker_port)?;
    let tmp = options.scratch();
    // Scratch files of a killed run are garbage; corpus, seeds and findings are never touched.
    let _held_scratch = scratch::hold_fresh(&tmp)?;
    if let Some(root) = &options.scratch_root {
        log::info!("scratch in {}", tmp.display());
        match scratch::remove_abandoned(root, &tmp) {
            0 => {}
            removed => log::info!("removed the scratch of {removed} campaigns that were killed"),
        }
    }
    match crate::ops::orphan_memory::clean_up_and_mark_start(&options.out) {
        Ok(0) => {}
        Ok(removed) => {
            // Any killed process of this user may have left them: this run's directory dates them only.
            log::info!(
                "removed {removed} orphaned shared-memory segments made since the last run on this directory started"
            )
        }
        Err(e) => log::warn!("{e:#}"),
    }
    let store = options.store()?;
    if let SeedSource::Directory(dir) = &options.seeds {
        // The directory's seeds are vetted on the campaign's cores before its clients start.
        let profiled = profile_directory(&options.config, &store, dir, &tmp, cores.ids.len());
        if shutdown::requested() {
            crate::campaign::summary::finish(&options.out, &tmp, started);
            return Ok(());
        }
        profiled?;
        // The clients fork from this process: they need none of the parses' pages.
        crate::ops::heap::return_freed_memory();
        if store.ids()?.is_empty() {
            anyhow::bail!("no seed of {} was accepted: nothing to fuzz", dir.display());
        }
    }
    // What the clients' csmith random numbers start from besides --random-seed: a resumed
    // campaign draws other seeds than its first start did. Counted before any client runs, so
    // that every client of a fresh campaign starts from the same.
    let seeds_at_start = store.ids()?.len() as u64;
    // A client that fails to start hangs the broker: check what the clients will set up.
    Instruments::new(&options.config).context("cannot observe the configured compilers")?;
    let deadline = options.seconds.map(|s| now_secs() + s);
    if let Some(seconds) = options.seconds {
        // A client checks its deadline between executions, but making a seed can take minutes
        // (a slow compiler's timeouts): at the deadline every process of the campaign is asked to
        // stop, as on Ctrl-C, which interrupts whatever it waits for. The forks do not inherit
        // this thread; they share the flag it raises.
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(seconds));
            shutdown::request_at_deadline();
        });
    }
    std::fs::write(options.out.join("configuration.toml"), options.config.to_toml())?;
    let background_triage = options
        .config
        .background_triage
        .then(|| crate::ops::background_triage::BackgroundTriage::start(&options.out))
        .transpose()?;

    let client_count = cores.ids.len();
    let monitor = (
        StatusMonitor::new(&options.out, options.status_interval),
        OnDiskJsonAggregateMonitor::with_interval(options.out.join("stats.json"), Duration::from_secs(5)),
    );
    let run_client = |state: Option<CampaignState>,
                      mgr: LlmpRestartingEventManager<(), Variant, CampaignState, StdShMem, StdShMemProvider>,
                      desc: ClientDescription| {
        let store = options.store().map_err(|e| Error::illegal_state(format!("{e:#}")))?;
        client(
            state,
            ConfiguredManager::new(mgr, store, options.config.observes_maps()),
            &desc,
            client_count,
            &options,
            deadline,
            seeds_at_start,
        )
    };
    let clients = NonZeroUsize::new(client_count).context("--cores names no core")?;
    let broker = Broker::spawn(monitor, broker_port, options.remote_broker, clients)?;
    // The restarters and the clients are forks that return from `launch` too.
    let launcher = std::process::id();
    let result = Launcher::builder()
        .shmem_provider(StdShMemProvider::new()?)
        // Clients share observations only with clients that compile with the same configuration.
        .configuration(EventConfig::from_name(&options.config.to_toml()))
        .monitor(NopMonitor::new())
        .run_client(run_client)
        .cores(&cores)
        .broker_port(broker_port)
        .spawn_broker(false)
        .build()
        .launch();
    broker.finish(Duration::from_secs(2));
    if let Some(triage) = background_triage {
        triage.stop();
    }
    if std::process::id() == launcher {
        crate::campaign::summary::finish(&options.out, &tmp, started);
    }
    match result {
        Ok(()) | Err(Error::ShuttingDown) => Ok(()),
        Err(e) => Err(anyhow::anyhow!("campaign failed: {e}")),
    }
}
