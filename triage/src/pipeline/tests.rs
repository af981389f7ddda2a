//! The pipeline's steps on small programs: a stopped reduction resumed, edit-list minimization.

use super::*;
use ccfuzz_mutators::edit::Edit;
use ccfuzz_mutators::model::Program;
use std::collections::BTreeMap;
use std::process::Command;

/// Compiles and runs a program with gcc; its output.
fn output_of(text: &str, dir: &Path) -> String {
    let source = dir.join("p.c");
    fs::write(&source, text).unwrap();
    let binary = dir.join("p");
    let status = Command::new("gcc")
        .args(["-O0", "-w"])
        .arg(&source)
        .arg("-o")
        .arg(&binary)
        .status()
        .unwrap();
    assert!(status.success(), "gcc rejects:\n{text}");
    String::from_utf8(Command::new(&binary).output().unwrap().stdout).unwrap()
}

#[test]
fn a_stopped_reduction_goes_on_from_where_it_was_if_it_still_passes() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("mismatch-1");
    let reduced = work.join("reduced").join("test.c");
    let script = dir.path().join("interesting.sh");
    fs::write(&script, "#!/bin/sh\ngrep -q BUG \"${1:-test.c}\"\n").unwrap();
    let unreduced = "int a;\nint b;\n/* BUG */\n";
    for (left, resumed) in [("/* BUG */\n", true), ("/* no */\n", false), (unreduced, false)] {
        write_file(&reduced, left).unwrap();
        // What a new triage of the finding does first: its work directory goes.
        set_aside_interrupted(&work);
        fs::remove_dir_all(&work).unwrap();
        write_file(&reduced, unreduced).unwrap();
        let earlier = interrupted_reduction(&work, &script, &reduced, unreduced).unwrap();
        assert_eq!(earlier.as_deref(), resumed.then_some(left), "{left:?}");
        let expected = if resumed { left } else { unreduced };
        assert_eq!(fs::read_to_string(&reduced).unwrap(), expected);
    }
}

#[test]
fn ddmin_keeps_the_two_edits_that_together_change_the_output() {
    let text = "int printf(const char *, ...);\nint main(void) {\n  int x = 0, y = 0;\n  y++;\n  y++;\n  y++;\n  printf(\"%d %d\\n\", x, y > 0);\n  return 0;\n}\n";
    let program = Program::parse_parts(text, "", 0, &BTreeMap::new()).unwrap();
    let body = program.statement(program.roots[0]);
    let [inc1, inc2, inc3, print, _] = body.children[..] else {
        panic!("unexpected statements {:?}", body.children)
    };
    let insert = |stmt, code: &str| Edit::InsertBefore {
        stmt,
        code: code.into(),
    };
    // Only `x = 7` followed by `x *= 3` makes it print 21; the other edits are noise, and
    // deleting all increments would change the second number.
    let edits = vec![
        insert(inc1, "x = 7;"),
        Edit::Delete { stmt: inc1 },
        insert(inc2, "y += 2;"),
        Edit::Delete { stmt: inc2 },
        insert(inc3, "x = x;"),
        insert(print, "x *= 3;"),
        Edit::Delete { stmt: inc3 },
    ];
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(output_of(&apply_edits(&program, &edits), dir.path()), "21 1\n");
    let mut tests = 0;
    let minimal = ddmin(&edits, |subset| {
        tests += 1;
        Ok(output_of(&apply_edits(&program, subset), dir.path()) == "21 1\n")
    })
    .unwrap();
    assert_eq!(minimal, vec![insert(inc1, "x = 7;"), insert(print, "x *= 3;")]);
    assert!(tests < 30, "{tests} compilations");
}
