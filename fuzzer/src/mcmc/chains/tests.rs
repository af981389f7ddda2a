//! Tests of the chains: rotation, retirement, restarts, saving and restoring.

use super::*;

#[test]
fn only_retired_chains_whose_seeds_are_gone_are_forgotten_and_their_restarts_still_count() {
    let seed = |n: u8| SeedId(format!("{n:032x}"));
    let mut chains = McmcChains::default();
    for n in 0..4 {
        chains.start(seed(n), CorpusId(n as usize), format!("state-{n}"), Some(2));
        chains.chains.get_mut(&seed(n)).unwrap().restarts = u64::from(n) + 1;
    }
    // Seeds 0 and 1 retired; of the stored, only seed 1 and seed 3 (in the rotation) remain.
    assert_eq!(chains.restarts(), 10);
    let forgotten = chains.forget_retired(|id| *id == seed(1));
    assert_eq!(forgotten, 1);
    let remembered: Vec<&SeedId> = chains.chains.keys().collect();
    assert_eq!(remembered, [&seed(1), &seed(2), &seed(3)]);
    assert_eq!((chains.started(), chains.restarts(), chains.rotating()), (4, 10, 2));
    assert_eq!(chains.forget_retired(|_| false), 1, "a chain in the rotation stays");
    assert_eq!((chains.started(), chains.restarts()), (4, 10));
}

fn seed(n: u8) -> SeedId {
    SeedId(format!("seed{n}"))
}

fn accepted(name: impl Into<String>) -> Acceptance {
    Acceptance {
        name: name.into(),
        energy: 1.0,
        distance: 0.5,
        from_seed: false,
    }
}

#[test]
fn a_full_rotation_retires_its_oldest_chain_and_keeps_the_active_one_turning() {
    let mut chains = McmcChains::default();
    for n in 0..3 {
        assert_eq!(
            chains.start(seed(n), CorpusId(n.into()), format!("v{n}"), Some(3)),
            None
        );
    }
    chains.active = 2;
    chains.move_chain(&seed(0), CorpusId(7), &accepted("w0"));
    assert_eq!(chains.current_state(&seed(0), "w0"), Some(CorpusId(7)));
    // The chain left its seed's entry.
    assert_eq!(chains.unvisited, [CorpusId(0)]);

    assert_eq!(chains.start(seed(3), CorpusId(3), "v3".into(), Some(3)), Some(seed(0)));
    assert_eq!(chains.order, [seed(1), seed(2), seed(3)]);
    // The chain that was turning still is.
    assert_eq!(chains.order[chains.active], seed(2));
    let retired = &chains.chains[&seed(0)];
    assert!(retired.retired);
    // The retired chain's state goes; the other chains keep theirs.
    assert_eq!(chains.unvisited, [CorpusId(0), CorpusId(7)]);
    assert_eq!((retired.accepted, retired.current), (1, CorpusId(7)));
    assert_eq!(chains.held(), [1, 2, 3].map(CorpusId).into());

    // Retiring the active chain hands a whole turn to the next.
    chains.active = 0;
    chains.turn_proposals = 9;
    assert_eq!(chains.start(seed(4), CorpusId(4), "v4".into(), Some(3)), Some(seed(1)));
    assert_eq!(
        (chains.order[chains.active].clone(), chains.turn_proposals),
        (seed(2), 0)
    );
}

#[test]
fn without_a_capacity_every_chain_keeps_turning() {
    let mut chains = McmcChains::default();
    for n in 0..50 {
        assert_eq!(chains.start(seed(n), CorpusId(n.into()), format!("v{n}"), None), None);
    }
    assert_eq!(chains.rotating(), 50);
}

#[test]
fn a_retired_chain_whose_state_was_deleted_stays_retired_after_a_resume() {
    use libafl::corpus::Testcase;
    let dir = tempfile::tempdir().unwrap();
    let mut state = crate::mcmc::test_state(dir.path());
    // The seeds' entries are on disk; neither chain's state is.
    let mut chains = McmcChains::default();
    for n in 0..2 {
        let unedited = Variant::of_seed(seed(n));
        let name = unedited.name();
        let id = state.corpus_mut().add(Testcase::new(unedited)).unwrap();
        chains.start(seed(n), id, name, None);
    }
    state.add_metadata(chains);
    let saved = serde_json::json!({
        "seed0": {"variant": "gone0", "energy": 1.0, "distance": 0.25, "proposals": 40, "accepted": 30, "length": 30, "restarts": 0, "retired": true},
        "seed1": {"variant": "gone1", "energy": 1.0, "distance": 0.5, "proposals": 9, "accepted": 7, "length": 7, "restarts": 0, "retired": false},
    });
    let path = dir.path().join("chains.json");
    std::fs::write(&path, saved.to_string()).unwrap();
    assert_eq!(restore_chains(&mut state, &path, Some(4)).unwrap(), 0);
    let chains = state.metadata::<McmcChains>().unwrap();
    let retired = &chains.chains[&seed(0)];
    assert!(retired.retired);
    assert_eq!((retired.proposals, retired.accepted, retired.distance), (40, 30, 0.25));
    // A chain in the rotation whose state is gone starts again from its seed.
    assert_eq!(chains.order, [seed(1)]);
    assert_eq!(chains.chains[&seed(1)].accepted, 0);
}

#[test]
fn a_chain_starts_again_from_its_seed_at_its_longest_and_a_resume_keeps_its_length() {
    use libafl::corpus::Testcase;
    let dir = tempfile::tempdir().unwrap();
    let mut state = crate::mcmc::test_state(dir.path());
    let mut chains = McmcChains::default();
    chains.start(seed(0), CorpusId(100), "v0".into(), None);
    for step in 1..=3 {
        chains.move_chain(&seed(0), CorpusId(100 + step), &accepted(format!("w{step}")));
    }
    let chain = &chains.chains[&seed(0)];
    assert!(chain.starts_again(Some(3)));
    assert!(!chain.starts_again(Some(4)) && !chain.starts_again(None));
    // A proposal from the seed, accepted: the chain is one move long again.
    let restarted = Variant::new(seed(0), vec![ccfuzz_mutators::edit::Edit::Delete { stmt: 9 }]);
    let id = state.corpus_mut().add(Testcase::new(restarted.clone())).unwrap();
    let from_seed = Acceptance {
        from_seed: true,
        ..accepted(restarted.name())
    };
    chains.move_chain(&seed(0), id, &from_seed);
    let chain = &chains.chains[&seed(0)];
    assert_eq!((chain.length, chain.accepted, chain.restarts), (1, 4, 1));
    assert!(!chain.starts_again(Some(3)));
    assert_eq!(chains.unvisited, [100, 101, 102, 103].map(CorpusId));
    assert_eq!((chains.mean_length(), chains.restarts()), (1.0, 1));

    let path = dir.path().join("chains.json");
    save_chains(&chains, &path).unwrap();
    let mut fresh = McmcChains::default();
    fresh.start(seed(0), CorpusId(100), "v0".into(), None);
    state.add_metadata(fresh);
    assert_eq!(restore_chains(&mut state, &path, None).unwrap(), 1);
    let chain = &state.metadata::<McmcChains>().unwrap().chains[&seed(0)];
    assert_eq!(
        (chain.current, chain.length, chain.accepted, chain.restarts),
        (id, 1, 4, 1)
    );
}

#[test]
fn a_chain_stands_on_one_entry_however_long_it_runs() {
    let mut chains = McmcChains::default();
    chains.start(seed(0), CorpusId(0), "v0".into(), None);
    for step in 1..=1000 {
        chains.move_chain(&seed(0), CorpusId(step), &accepted(format!("w{step}")));
    }
    // Every state it left, its seed's entry first.
    assert_eq!(chains.unvisited, (0..1000).map(CorpusId).collect::<Vec<_>>());
    assert_eq!(chains.held(), [CorpusId(1000)].into());
    // An accepted proposal that is the state it stands on moves it nowhere.
    assert_eq!(chains.current_state(&seed(0), "w1000"), Some(CorpusId(1000)));
    assert_eq!(chains.current_state(&seed(0), "w999"), None);
    chains.move_chain(&seed(0), CorpusId(1000), &accepted("w1000"));
    assert_eq!(chains.unvisited.len(), 1000);
}

#[test]
fn entries_no_chain_in_the_rotation_stands_on_are_unvisited() {
    let mut chains = McmcChains::default();
    chains.start(seed(0), CorpusId(0), "v0".into(), Some(1));
    // Another client's variant of this seed, and one of a seed with no chain here.
    chains.release(CorpusId(1));
    chains.release(CorpusId(2));
    assert_eq!(chains.unvisited, [CorpusId(1), CorpusId(2)]);
    chains.start(seed(1), CorpusId(3), "v1".into(), Some(1));
    assert_eq!(chains.unvisited, [1, 2, 0].map(CorpusId));
    // A proposal of the retired chain accepted after it retired is not kept either.
    chains.move_chain(&seed(0), CorpusId(4), &accepted("w0"));
    assert_eq!(chains.unvisited, [1, 2, 0, 0, 4].map(CorpusId));

    // After a resume, whatever the rotation does not stand on; a chain's current state (as
    // restored from the chains file) is held.
    chains.chains.get_mut(&seed(1)).unwrap().current = CorpusId(5);
    chains.release_unheld((0..6).map(CorpusId));
    assert_eq!(chains.unvisited, [0, 1, 2, 3, 4].map(CorpusId));
}
