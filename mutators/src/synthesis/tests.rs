//! Speculative execution and synthesis over a small environment: predicates' truth values,
//! defined expressions, undefined operations rejected, dead code a compiler accepts.

use super::*;
use libafl_bolts::rands::StdRand;

fn entry(name: &str) -> SynExpr {
    env().entries.iter().find(|e| &*e.expr == name).unwrap().as_expr()
}

fn env() -> Env {
    Env {
        entries: vec![
            EnvEntry {
                expr: "a".into(),
                kind: IntKind::Int,
                assignable: true,
                values: vec![0],
            },
            EnvEntry {
                expr: "b".into(),
                kind: IntKind::Short,
                assignable: true,
                values: vec![-1],
            },
            EnvEntry {
                expr: "c".into(),
                kind: IntKind::UShort,
                assignable: false,
                values: vec![65535],
            },
            EnvEntry {
                expr: "e".into(),
                kind: IntKind::UInt,
                assignable: true,
                values: vec![0, 1, 2],
            },
            EnvEntry {
                expr: "m".into(),
                kind: IntKind::Int,
                assignable: true,
                values: vec![i32::MIN as i128, i32::MAX as i128],
            },
        ],
    }
}

#[test]
fn predicates_have_their_truth_value_for_every_observed_value() {
    let mut rand = StdRand::with_seed(1);
    for round in 0..2000 {
        let expected = round % 2 == 0;
        let p = syn_pred(&env(), expected, (round % 3) as u32, &mut rand);
        assert!(
            p.is_constantly(expected),
            "{} is not always {expected}: {:?}",
            p.text,
            p.values
        );
    }
}

#[test]
fn expressions_are_defined_for_every_observed_value() {
    let mut rand = StdRand::with_seed(2);
    let mut texts = BTreeSet::new();
    for _ in 0..2000 {
        let e = syn_expr(&env(), &mut rand);
        // Compiled variants are checked under UBSan elsewhere; here every value is in range.
        assert!(!e.values.is_empty());
        assert!(e.values.iter().all(|v| e.kind.contains(*v)), "{}", e.text);
        texts.insert(e.text);
    }
    assert!(texts.len() > 500, "only {} distinct expressions", texts.len());
}

#[test]
fn speculative_execution_rejects_undefined_operations() {
    let m = entry("m");
    let one = SynExpr::constant(IntKind::Int, 1);
    assert_eq!(SynExpr::binary(BinaryOp::Add, &m, &one), None, "INT_MAX + 1 overflows");
    assert_eq!(SynExpr::unary(UnaryOp::Neg, &m), None, "-INT_MIN overflows");
    let zero_or_more = entry("e");
    assert_eq!(SynExpr::binary(BinaryOp::Div, &one, &zero_or_more), None, "e may be 0");
    let sum = SynExpr::binary(BinaryOp::Add, &zero_or_more, &entry("b")).unwrap();
    // e is unsigned int, b a short -1 converted to unsigned: 0 + UINT_MAX, 1 + UINT_MAX …
    assert_eq!(sum.kind, IntKind::UInt);
    assert_eq!(sum.values, vec![0, 1, u32::MAX as i128]);
}

/// The body of every `for (c = 0; …) { body }` in `code`, with its counter.
fn loops(code: &str) -> Vec<(&str, &str)> {
    let mut found = Vec::new();
    for (start, _) in code.match_indices("for (") {
        let header = &code[start + 5..];
        let counter = &header[..header.find(" = 0;").unwrap()];
        let open = start + code[start..].find("{ ").unwrap();
        let mut depth = 0;
        let close = (open..code.len())
            .find(|&i| {
                match code.as_bytes()[i] {
                    b'{' => depth += 1,
                    b'}' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .unwrap();
        found.push((counter, &code[open + 1..close]));
    }
    found
}

#[test]
fn dead_code_loops_never_assign_their_counter() {
    // `for (a = 0; a < 5; a++) { a = (a - 2); }` overflows `a` at its 2^31st iteration,
    // which gcc diagnoses even in code that never runs.
    let mut rand = StdRand::with_seed(3);
    let mut checked = 0;
    for _ in 0..3000 {
        let code = dead_code(&env(), 3, false, &mut rand);
        for (counter, body) in loops(&code) {
            let assigns = body.match_indices(&format!("{counter} = ")).any(|(at, _)| {
                at == 0 || !body.as_bytes()[at - 1].is_ascii_alphanumeric() && body.as_bytes()[at - 1] != b'_'
            });
            assert!(!assigns, "the loop over {counter} assigns it: {code}");
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {checked} loops");
}

#[test]
fn dead_code_has_nothing_a_compiler_diagnoses() {
    let mut rand = StdRand::with_seed(7);
    let empty = Env::default();
    // Constants the compilers see through: `static const` variables of one value.
    let mut with_constants = env();
    for (name, value) in [("z", 0), ("w", 40)] {
        with_constants.entries.push(EnvEntry {
            expr: name.into(),
            kind: IntKind::Int,
            assignable: false,
            values: vec![value],
        });
    }
    // Enough expressions that the rare folds (`(-1 | a) << b`) occur.
    let mut body = String::new();
    for i in 0..60000 {
        let env = if i % 2 == 0 { &empty } else { &with_constants };
        body.push_str(&format!("    sink = {};\n", dead_expression(env, &mut rand)));
    }
    let program =
            format!("int sink;\nstatic const int z = 0, w = 40;\nvoid never(int a, short b, unsigned short c, unsigned e, int m) {{\n{body}}}\n");
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("dead.c");
    std::fs::write(&source, &program).unwrap();
    let errors = [
        "div-by-zero",
        "shift-count-negative",
        "shift-count-overflow",
        "shift-negative-value",
        "overflow",
        "integer-overflow",
    ];
    for (compiler, only) in [("gcc-12", "-c"), ("clang-19", "-fsyntax-only")] {
        let flags: Vec<String> = errors
            .iter()
            .filter(|w| compiler == "clang-19" || **w != "integer-overflow")
            .map(|w| format!("-Werror={w}"))
            .collect();
        let out = std::process::Command::new(compiler)
            .arg(only)
            .args(&flags)
            .arg(&source)
            .arg("-o")
            .arg(dir.path().join("dead.o"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{compiler}: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .find(|l| l.contains("error"))
                .unwrap_or("")
        );
    }
}
