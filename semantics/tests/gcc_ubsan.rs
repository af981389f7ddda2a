//! The C-semantics core against gcc with UBSan: every pair of values of the 8-bit types and
//! boundary values of every wider type, through every binary and unary operator and every
//! conversion.
//!
//! A generated C program evaluates each case the core calls defined, under
//! `-fsanitize=undefined -fno-sanitize-recover`, and prints a hash of the values and result
//! types per combination of operator and operand types; the core computes the same hashes.
//! A case the core wrongly calls defined makes UBSan abort the program; a wrong value or type
//! changes a hash. Cases the core calls undefined are sampled (the first, the last and some in
//! between of every combination) and each is run in a forked child, which UBSan must stop.

use ccfuzz_semantics::{convert, eval_binary, eval_unary, BinaryOp, IntKind, UnaryOp, Value};
use std::fmt::Write as _;
use std::process::Command;

#[derive(Clone, Copy)]
enum Op {
    Binary(BinaryOp),
    Unary(UnaryOp),
    Convert,
}

struct Combo {
    op: Op,
    a: IntKind,
    a_values: &'static str,
    /// The right operand's type for binary operators, the target type for conversions.
    b: Option<IntKind>,
    b_values: &'static str,
}

fn is_small(kind: IntKind) -> bool {
    kind.bits() == 8
}

/// Every value of an 8-bit type.
fn full(kind: IntKind) -> Vec<i128> {
    (kind.min()..=kind.max()).collect()
}

/// Boundary values of a type: its extremes, small values, and powers of two around them.
fn edges(kind: IntKind) -> Vec<i128> {
    let mut values = vec![
        kind.min(),
        kind.min() + 1,
        kind.max(),
        kind.max() - 1,
        0,
        1,
        2,
        3,
        -1,
        -2,
        -3,
        7,
        100,
    ];
    for k in [1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 33, 62, 63] {
        for v in [
            1i128 << k,
            (1i128 << k) - 1,
            (1i128 << k) + 1,
            -(1i128 << k),
            -(1i128 << k) + 1,
        ] {
            values.push(v);
        }
    }
    values.retain(|v| kind.contains(*v));
    values.sort();
    values.dedup();
    values
}

fn values(kind: IntKind, set: &str) -> Vec<i128> {
    if set == "full" {
        full(kind)
    } else {
        edges(kind)
    }
}

fn combos() -> Vec<Combo> {
    let mut all = Vec::new();
    for a in IntKind::ALL {
        for b in IntKind::ALL {
            let set = if is_small(a) && is_small(b) { "full" } else { "edge" };
            for op in BinaryOp::ALL {
                all.push(Combo {
                    op: Op::Binary(op),
                    a,
                    a_values: set,
                    b: Some(b),
                    b_values: set,
                });
            }
            let from = if is_small(a) { "full" } else { "edge" };
            all.push(Combo {
                op: Op::Convert,
                a,
                a_values: from,
                b: Some(b),
                b_values: "none",
            });
        }
        let set = if is_small(a) { "full" } else { "edge" };
        for op in UnaryOp::ALL {
            all.push(Combo {
                op: Op::Unary(op),
                a,
                a_values: set,
                b: None,
                b_values: "none",
            });
        }
    }
    all
}

fn ident(kind: IntKind) -> String {
    kind.spelling().replace(' ', "_")
}

fn kind_code(kind: IntKind) -> u64 {
    match kind {
        IntKind::Int => 1,
        IntKind::UInt => 2,
        IntKind::Long => 3,
        IntKind::ULong => 4,
        IntKind::LongLong => 5,
        IntKind::ULongLong => 6,
        _ => 9,
    }
}

const FNV_OFFSET: u64 = 14695981039346656037;
const FNV_PRIME: u64 = 1099511628211;

fn mix(hash: u64, x: u64) -> u64 {
    (hash ^ x).wrapping_mul(FNV_PRIME)
}

/// The core's verdict on one case: the result, or None for undefined behaviour.
fn evaluate(combo: &Combo, x: i128, y: i128) -> Option<Value> {
    let a = Value::new(combo.a, x);
    match combo.op {
        Op::Binary(op) => eval_binary(op, a, Value::new(combo.b.unwrap(), y)).ok(),
        Op::Unary(op) => eval_unary(op, a).ok(),
        Op::Convert => {
            let to = combo.b.unwrap();
            Some(Value {
                kind: to.promoted(),
                value: convert(x, to),
            })
        }
    }
}

fn c_program(combos: &[Combo]) -> String {
    let mut c = String::from(
        "#include <stdio.h>\n#include <stdlib.h>\n#include <stddef.h>\n#include <unistd.h>\n#include <sys/wait.h>\n\n",
    );
    for kind in IntKind::ALL {
        for set in ["full", "edge"] {
            if set == "full" && !is_small(kind) {
                continue;
            }
            let list: Vec<String> = values(kind, set).iter().map(|v| kind.literal(*v)).collect();
            writeln!(
                c,
                "static const {} {set}_{}[] = {{{}}};",
                kind.spelling(),
                ident(kind),
                list.join(", ")
            )
            .unwrap();
        }
    }
    c.push_str("#define KIND(e) _Generic((e), int: 1, unsigned int: 2, long: 3, unsigned long: 4, long long: 5, unsigned long long: 6, default: 9)\n");
    c.push_str("typedef unsigned long long (*eval_fn)(size_t, size_t, int *);\n");
    for (n, combo) in combos.iter().enumerate() {
        let a_array = format!("{}_{}", combo.a_values, ident(combo.a));
        let (expr, b_decl) = match combo.op {
            Op::Binary(op) => {
                let b = combo.b.unwrap();
                let decl = format!(" {} b = {}_{}[j];", b.spelling(), combo.b_values, ident(b));
                (format!("a {} b", op.symbol()), decl)
            }
            Op::Unary(op) => (format!("{}a", op.symbol()), String::new()),
            // Unary plus promotes, as the core reports the converted value's promoted type.
            Op::Convert => (format!("+({})a", combo.b.unwrap().spelling()), String::new()),
        };
        writeln!(
            c,
            "static unsigned long long f{n}(size_t i, size_t j, int *kind) {{ {} a = {a_array}[i];{b_decl} (void)j; *kind = KIND({expr}); return (unsigned long long)({expr}); }}",
            combo.a.spelling()
        )
        .unwrap();
    }
    let sizes = |f: &dyn Fn(&Combo) -> String| combos.iter().map(f).collect::<Vec<_>>().join(", ");
    let functions: Vec<String> = (0..combos.len()).map(|n| format!("f{n}")).collect();
    writeln!(c, "static const eval_fn F[] = {{{}}};", functions.join(", ")).unwrap();
    writeln!(
        c,
        "static const size_t NA[] = {{{}}};",
        sizes(&|k| format!(
            "sizeof {}_{} / sizeof {}_{}[0]",
            k.a_values,
            ident(k.a),
            k.a_values,
            ident(k.a)
        ))
    )
    .unwrap();
    writeln!(
        c,
        "static const size_t NB[] = {{{}}};",
        sizes(&|k| match (k.op, k.b) {
            (Op::Binary(_), Some(b)) => format!(
                "sizeof {}_{} / sizeof {}_{}[0]",
                k.b_values,
                ident(b),
                k.b_values,
                ident(b)
            ),
            _ => "1".into(),
        })
    )
    .unwrap();
    writeln!(c, "#define COMBOS {}", combos.len()).unwrap();
    c.push_str(
        r#"
int main(int argc, char **argv) {
    FILE *in = fopen(argv[2], "rb");
    if (!in) return 2;
    if (argv[1][0] == 'h') {
        /* Hash mode: argv[2] holds one verdict byte per case, 1 for undefined. */
        for (size_t n = 0; n < COMBOS; n++) {
            unsigned long long h = 14695981039346656037ULL;
            for (size_t i = 0; i < NA[n]; i++)
                for (size_t j = 0; j < NB[n]; j++) {
                    int verdict = fgetc(in);
                    if (verdict != 0) continue;
                    int kind;
                    unsigned long long r = F[n](i, j, &kind);
                    h = (h ^ r) * 1099511628211ULL;
                    h = (h ^ (unsigned long long)kind) * 1099511628211ULL;
                }
            printf("%zu %016llx\n", n, h);
        }
        return 0;
    }
    /* UB mode: argv[2] lists "combo i j" cases; each runs in a child that UBSan must stop. */
    size_t n, i, j;
    while (fscanf(in, "%zu %zu %zu", &n, &i, &j) == 3) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            int kind;
            volatile unsigned long long r = F[n](i, j, &kind);
            (void)r;
            _exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) printf("missed %zu %zu %zu\n", n, i, j);
    }
    printf("done\n");
    return 0;
}
"#,
    );
    c
}

#[test]
#[ignore = "compiles and runs a large program under UBSan: make test"]
fn the_core_agrees_with_gcc_and_ubsan() {
    let combos = combos();
    let mut verdicts = Vec::new();
    let mut expected = Vec::new();
    let mut ub_samples = String::new();
    let mut ub_total = 0usize;
    for (n, combo) in combos.iter().enumerate() {
        let xs = values(combo.a, combo.a_values);
        let ys = match (combo.op, combo.b) {
            (Op::Binary(_), Some(b)) => values(b, combo.b_values),
            _ => vec![0],
        };
        let mut hash = FNV_OFFSET;
        let mut undefined = Vec::new();
        for (i, &x) in xs.iter().enumerate() {
            for (j, &y) in ys.iter().enumerate() {
                match evaluate(combo, x, y) {
                    Some(result) => {
                        verdicts.push(0u8);
                        hash = mix(hash, convert(result.value, IntKind::ULongLong) as u64);
                        hash = mix(hash, kind_code(result.kind));
                    }
                    None => {
                        verdicts.push(1u8);
                        undefined.push((i, j));
                    }
                }
            }
        }
        expected.push(format!("{n} {hash:016x}"));
        ub_total += undefined.len();
        // The first, the last and up to six spread between them.
        let step = (undefined.len() / 7).max(1);
        let mut picked: Vec<_> = undefined.iter().step_by(step).take(7).copied().collect();
        picked.extend(undefined.last().copied());
        picked.dedup();
        for (i, j) in picked {
            writeln!(ub_samples, "{n} {i} {j}").unwrap();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("semantics.c");
    std::fs::write(&source, c_program(&combos)).unwrap();
    std::fs::write(dir.path().join("verdicts"), &verdicts).unwrap();
    std::fs::write(dir.path().join("ub"), &ub_samples).unwrap();
    let binary = dir.path().join("semantics");
    let compile = Command::new("gcc")
        .args([
            "-std=c11",
            "-O0",
            "-w",
            "-fsanitize=undefined",
            "-fno-sanitize-recover=all",
            "-o",
        ])
        .arg(&binary)
        .arg(&source)
        .output()
        .unwrap();
    assert!(compile.status.success(), "{}", String::from_utf8_lossy(&compile.stderr));

    let run = Command::new(&binary)
        .arg("hash")
        .arg(dir.path().join("verdicts"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "UBSan stopped a case the core calls defined:\n{stderr}"
    );
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let mismatches: Vec<String> = stdout
        .lines()
        .zip(&expected)
        .filter(|(got, want)| got != want)
        .map(|(got, _)| {
            let n: usize = got.split(' ').next().unwrap().parse().unwrap();
            let c = &combos[n];
            let op = match c.op {
                Op::Binary(op) => op.symbol().to_string(),
                Op::Unary(op) => format!("unary {}", op.symbol()),
                Op::Convert => "conversion".into(),
            };
            format!("{op} on {} and {:?}", c.a.spelling(), c.b.map(IntKind::spelling))
        })
        .collect();
    assert_eq!(
        stdout.lines().count(),
        expected.len(),
        "the program stopped early:\n{stderr}"
    );
    assert!(
        mismatches.is_empty(),
        "values or types differ from gcc for {} combinations:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );

    let run = Command::new(&binary)
        .arg("ub")
        .arg(dir.path().join("ub"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("done"), "{stdout}");
    let missed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("missed")).collect();
    assert!(
        missed.is_empty(),
        "UBSan accepts {} cases the core calls undefined:\n{}",
        missed.len(),
        missed.join("\n")
    );
    println!(
        "{} combinations, {} cases, {} undefined ({} checked one by one)",
        combos.len(),
        verdicts.len(),
        ub_total,
        ub_samples.lines().count()
    );
}
