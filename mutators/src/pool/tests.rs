//! Tests of the statement pool: what a statement's entry holds and where it fits.

use super::*;
use std::collections::BTreeMap;

fn program(text: &str) -> Program {
    Program::parse_parts(text, "", 0, &BTreeMap::new()).unwrap()
}

fn texts(pool: &Pool, target: &Program, seed: &SeedId, location: StmtId) -> Vec<String> {
    let candidates = pool.candidates(target, seed, location);
    candidates
        .entries
        .iter()
        .map(|entry| {
            let c = candidates.candidate(entry);
            c.instantiate(&vec![0; c.choices.len()])
        })
        .collect()
}

#[test]
fn a_full_pool_drops_its_oldest_entries_for_a_new_seed() {
    let statements = |name: &str| -> String {
        let body: String = (0..4).map(|i| format!("{name} = {name} + {i}; ")).collect();
        format!("int {name}; void f_{name}(void) {{ {body}}}")
    };
    let (old, new) = (program(&statements("a")), program(&statements("b")));
    let mut pool = Pool::with_capacity(6);
    pool.add_seed(&SeedId::of_text(&old.text), &old);
    assert_eq!(pool.entries.len(), 4);
    pool.add_seed(&SeedId::of_text(&new.text), &new);
    let texts: Vec<String> = pool.entries.iter().map(|e| e.origin().0.clone()).collect();
    assert_eq!(pool.entries.len(), 6, "{texts:?}");
    let from_new = pool
        .entries
        .iter()
        .filter(|e| e.origin() == &SeedId::of_text(&new.text))
        .count();
    assert_eq!(from_new, 4);
    // A dropped statement's text may come back with a later seed.
    assert_eq!(pool.texts.len(), 6);
}

#[test]
fn the_hole_kinds_only_dropped_entries_had_are_forgotten_and_the_others_still_match() {
    let mut pool = Pool::with_capacity(3);
    for size in 1..=300 {
        let seed = program(&format!(
            "int a{size}[{size}]; void f(void) {{ a{size}[0] = a{size}[0] + 1; }}"
        ));
        pool.add_seed(&SeedId::of_text(&seed.text), &seed);
    }
    // Each seed's array type is a kind of its own: 300 were given out, 3 are used.
    assert!(pool.kinds.count <= 2 * 3 + 64, "{} kinds", pool.kinds.count);
    let listed: usize = pool.kinds.by_type.values().map(Vec::len).sum();
    assert_eq!(listed, pool.kinds.count as usize);
    let target = program("int b[300]; int c[299]; void g(void) { b[1] = 2; }");
    let location = target.statement(target.roots[0]).children[0];
    let mut found = texts(&pool, &target, &SeedId::of_text(&target.text), location);
    found.sort();
    assert_eq!(found, ["b[0] = b[0] + 1;", "c[0] = c[0] + 1;"]);
}

#[test]
fn holes_are_renamed_to_variables_of_the_same_type() {
    let donor = program(
        "long h(long q, unsigned u) { q = q + 1; u = u * 2u; while (q) { if (q > 3) continue; q--; } return q; }",
    );
    let donor_id = SeedId::of_text(&donor.text);
    let mut pool = Pool::default();
    pool.add_seed(&donor_id, &donor);
    let target = program("long f(long x) { long y = 2; y = y + x; return y; }");
    let target_id = SeedId::of_text(&target.text);
    let body = target.statement(target.roots[0]);
    let location = body.children[0];
    let found = texts(&pool, &target, &target_id, location);
    // `u` has no unsigned counterpart, `continue` needs a loop, `return` is never pooled.
    assert!(found.contains(&"y = y + 1;".to_string()), "{found:?}");
    assert!(!found.iter().any(|t| t.contains("* 2u")), "{found:?}");
    assert!(!found.iter().any(|t| t == "continue;"), "{found:?}");
    assert!(!found.iter().any(|t| t.contains("return")), "{found:?}");
    let candidates = pool.candidates(&target, &target_id, location);
    let while_entry = candidates
        .entries
        .iter()
        .find(|e| e.fragment.shape.kind == StmtKind::While)
        .map(|e| candidates.candidate(e))
        .expect("the loop, with its own continue, fits");
    assert_eq!(while_entry.choices, vec![vec!["y", "x"]]);
    assert_eq!(while_entry.renamings(), 2);
}

#[test]
fn records_and_unknown_functions_stay_in_their_seed() {
    let donor = program("struct S { int a; }; int k(int); void h(struct S s, int i) { s.a = i; i = k(i); }");
    let donor_id = SeedId::of_text(&donor.text);
    let mut pool = Pool::default();
    pool.add_seed(&donor_id, &donor);
    let other = program("struct S { long a; }; void f(struct S s, int i) { i = 1; }");
    let other_id = SeedId::of_text(&other.text);
    let location = other.statement(other.roots[0]).children[0];
    assert!(texts(&pool, &other, &other_id, location).is_empty());
    // In its own seed, after the declaration of `k`, both fit.
    let own = donor.statement(donor.roots[0]).children[1];
    let found = texts(&pool, &donor, &donor_id, own);
    assert!(found.contains(&"s.a = i;".to_string()), "{found:?}");
    assert!(found.contains(&"i = k(i);".to_string()), "{found:?}");
}

#[test]
fn in_its_own_seed_a_statement_naming_a_tag_fits_only_where_the_tag_is_declared() {
    // As csmith lays a program out: helper functions, then the structs, then the code.
    let seed = program(
        "int helper(int x) { x = x + 1; return x; } struct S1 { int f; }; \
         void g(int i) { { struct S1 s = {1}; i = s.f; } i = i * 2; }",
    );
    let id = SeedId::of_text(&seed.text);
    let mut pool = Pool::default();
    pool.add_seed(&id, &seed);
    let declares_s = |found: &[String]| found.iter().any(|t| t.contains("struct S1 s"));
    let before_struct = seed.statement(seed.roots[0]).children[0];
    let found = texts(&pool, &seed, &id, before_struct);
    assert!(!declares_s(&found), "{found:?}");
    assert!(found.contains(&"x = x * 2;".to_string()), "{found:?}");
    let after_struct = seed.statement(seed.roots[1]).children[1];
    let found = texts(&pool, &seed, &id, after_struct);
    assert!(declares_s(&found), "{found:?}");
}

#[test]
fn the_quick_check_of_an_entry_agrees_with_building_its_choices() {
    let sources = [
        "typedef int T; int k(int); int g; int helper(int x) { x = x + 1; return x; } \
         struct S1 { int f; }; void h(long q, unsigned u, T t) { int z = 0; q = q + 1; u = u * 2u; \
         t = k(t); g = helper(g); { struct S1 s = {1}; z = s.f; } while (q) { if (q > 3) continue; q--; break; } \
         { int g = 3; g = g + z; } }",
        "typedef long T; int k(int); long g; void f(long x, T t) { long y = 2; y = y + x; \
         switch (x) { case 1: y = k(1); break; } for (;;) { x--; if (x) break; } t = t + 1; }",
        "int helper(int x); int k(int); unsigned w; const int c = 1; \
         void e(int * const *p, int *q, unsigned u) { int helper = 2; q = 0; u = u * 2u; w = u; helper = k(helper); }",
        // The only `long` in `n` is named as the variable the block declares.
        "void m(long x) { { long y = 1; x = x + y; } } void n(long y) { y = 0; }",
    ];
    let programs: Vec<Program> = sources.iter().map(|s| program(s)).collect();
    let mut pool = Pool::default();
    for p in &programs {
        pool.add_seed(&SeedId::of_text(&p.text), p);
    }
    let (mut fitting, mut checked) = (0, 0);
    for target in &programs {
        let target_seed = SeedId::of_text(&target.text);
        for location in target.statements.iter().map(|s| s.id) {
            let site = Site::new(target, location, &pool.kinds);
            let mut donors: Vec<DonorFit> = Vec::new();
            for entry in &pool.entries {
                let fits = site.fits(entry, DonorFit::of(&mut donors, entry, &target_seed), target);
                let choices = site.choices(entry, target, &target_seed);
                assert_eq!(
                    fits,
                    choices.is_some(),
                    "{} at {location}: {choices:?}",
                    entry.fragment.text
                );
                fitting += usize::from(fits);
                checked += 1;
            }
        }
    }
    // Both answers occur often enough for the agreement to mean something.
    assert!(fitting > 20 && checked - fitting > 20, "{fitting} of {checked} fit");
}

#[test]
fn a_hole_is_not_renamed_to_a_variable_the_entry_declares() {
    let donor = program("void m(long x) { { long y = 1; x = x + y; } }");
    let mut pool = Pool::default();
    pool.add_seed(&SeedId::of_text(&donor.text), &donor);
    let block = |found: &[String]| found.iter().any(|t| t.contains("long y = 1"));
    // Where the only `long` is named `y`, the block would read its own `y`.
    let target = program("void n(long y) { y = 0; }");
    let target_id = SeedId::of_text(&target.text);
    let location = target.statement(target.roots[0]).children[0];
    let found = texts(&pool, &target, &target_id, location);
    assert!(!block(&found), "{found:?}");
    let target = program("void n(long y, long z) { y = 0; }");
    let target_id = SeedId::of_text(&target.text);
    let location = target.statement(target.roots[0]).children[0];
    let found = texts(&pool, &target, &target_id, location);
    assert!(found.iter().any(|t| t.contains("z = z + y")), "{found:?}");
}

#[test]
fn qualifiers_must_match_through_pointers() {
    let donor = program("int v; void h(int **p, int *q) { *p = q; }");
    let donor_id = SeedId::of_text(&donor.text);
    let mut pool = Pool::default();
    pool.add_seed(&donor_id, &donor);
    let target = program("int w; void f(int * const *p, int *q) { q = 0; }");
    let target_id = SeedId::of_text(&target.text);
    let location = target.statement(target.roots[0]).children[0];
    let found = texts(&pool, &target, &target_id, location);
    assert!(!found.iter().any(|t| t.starts_with("*p")), "{found:?}");
}
