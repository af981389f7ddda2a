//! Tests of the repairs on clang's own diagnostics of small pre-C99 programs.

use super::*;

const DIAGNOSTICS: &str = "\
t.c:4:3: error: parameter 'i' was not declared, defaults to 'int'; ISO C99 and later do not support implicit int [-Wimplicit-int]
fix-it:\"t.c\":{4:5-4:5}:\"  int i;\\n\"
t.c:4:1: error: type specifier missing, defaults to 'int'; ISO C99 and later do not support implicit int [-Wimplicit-int]
fix-it:\"t.c\":{4:1-4:1}:\"int\"
t.c:12:10: error: call to undeclared function 'f'; ISO C99 and later do not support implicit function declarations [-Wimplicit-function-declaration]
t.c:16:5: error: call to undeclared library function 'abort' with type 'void (void) __attribute__((noreturn))'; ISO C99 and later do not support implicit function declarations [-Wimplicit-function-declaration]
t.c:16:5: note: include the header <stdlib.h> or explicitly provide a declaration for 'abort'
t.c:20:1: error: expected ';' after expression
fix-it:\"t.c\":{20:2-20:2}:\";\"
t.c:2:1: error: type specifier missing, defaults to 'int' [-Werror,-Wimplicit-int]
t.c:9:24: error: implicit declaration of function 'h' is invalid in C99 [-Werror,-Wimplicit-function-declaration]
t.c:6:1: error: non-void function does not return a value [-Werror,-Wreturn-type]
t.c:5:10: error: non-void function does not return a value in all control paths [-Werror,-Wreturn-type]
t.c:7:3: error: non-void function does not return a value [-Werror,-Wreturn-type]
";

#[test]
fn diagnostics_give_headers_declarations_implicit_int_fixits_and_fall_offs_only() {
    let fixes = Fixes::read(DIAGNOSTICS);
    assert_eq!(fixes.headers, BTreeSet::from(["stdlib.h".to_string()]));
    assert_eq!(fixes.declarations, BTreeSet::from(["f".to_string(), "h".to_string()]));
    // The `;` fix-it belongs to a syntax error, which is not repaired; clang-14's implicit int
    // (line 2) comes without a fix-it.
    assert_eq!(
        fixes.insertions,
        vec![
            (2, 1, "int".to_string()),
            (4, 1, "int".to_string()),
            (4, 5, "  int i;\n".to_string())
        ]
    );
    assert_eq!(fixes.returns, [(5, 10), (6, 1), (7, 3)]);
}

#[test]
fn insertions_go_in_from_the_end_and_additions_on_top() {
    let mut repaired = Repaired {
        // Line 7's brace comes from a macro: clang points at its use, where no return goes.
        text: "x\ny\nz\ns(i){\n{ if (i) }\n}\nh() { END\n".into(),
        changes: Vec::new(),
    };
    Fixes::read(DIAGNOSTICS).apply(&mut repaired);
    assert_eq!(
        repaired.text,
        "#include <stdlib.h>\nint f();\nint h();\nx\nint y\nz\nint s(i)  int i;\n{\n{ if (i) return 0; }\nreturn 0; }\nh() { END\n"
    );
    assert_eq!(
        repaired.changes,
        [
            "implicit int ×3",
            "return 0 ×2",
            "<stdlib.h>",
            "declared f",
            "declared h"
        ]
    );
}

/// A torture test in the style of the 1990s, as GCC's testsuite has hundreds; clang-14 only
/// warns about what clang-19 rejects, and both lead to the same repairs.
#[test]
fn a_pre_c99_test_compiles_with_clang_19_after_repair_and_still_exits_0() {
    for clang in ["clang-14", "clang-19"] {
        repaired_with(clang);
    }
}

fn repaired_with(clang: &str) {
    // clang-14 does not diagnose a K&R parameter left without a type: each has one here.
    let source = "\
f (x, y)
     short x; int y;
{
  return x + y;
}

main ()
{
  if (f (1, 2) != 3 || g (4) != 4)
    abort ();
  h ();
  exit (0);
}

g (int x) { return x; }

h () { }
";
    let dir = tempfile::tempdir().unwrap();
    let repaired = repair(clang, source, dir.path(), Duration::from_secs(60)).unwrap();
    // clang-14 sees h's missing return in the first round, clang-19 once h has its `int`.
    let mut changes = repaired.changes.clone();
    changes.sort();
    assert_eq!(
        changes,
        [
            "<stdlib.h>",
            "declared g",
            "declared h",
            "implicit int ×4",
            "return 0 ×1"
        ],
        "{clang}"
    );
    let file = dir.path().join("repaired.c");
    std::fs::write(&file, &repaired.text).unwrap();
    let binary = dir.path().join("repaired");
    let built = std::process::Command::new("clang-19")
        .arg("-Werror=return-type")
        .arg(&file)
        .arg("-o")
        .arg(&binary)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    assert!(std::process::Command::new(&binary).status().unwrap().success());
}
