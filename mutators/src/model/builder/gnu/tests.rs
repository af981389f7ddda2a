//! Tests of GNU C and C89 support: seeds with such constructs parse into the expected model.

use crate::ctype::{CType, IntKind};
use crate::model::{Program, StmtKind};
use crate::pool::Pool;
use crate::seed::SeedId;

fn parse(text: &str) -> Program {
    Program::parse_parts(text, "", 0, &Default::default()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn var(p: &Program, scope: usize, name: &str) -> CType {
    p.scopes[scope].vars.iter().find(|v| v.name == name).unwrap().ty.clone()
}

/// The statements of the program, as their kinds and texts in the seed.
fn statements(p: &Program) -> Vec<(StmtKind, &str)> {
    p.statements.iter().map(|s| (s.kind, p.source_of(s.id))).collect()
}

#[test]
fn implicit_int_definitions_and_declarations_parse_with_exact_spans() {
    let text = "static count;\nmain ()\n{\n  register i;\n  i = count;\n  if (i)\n    i++;\n  return i;\n}\n";
    let p = parse(text);
    assert_eq!(&*p.text, text);
    assert_eq!(
        statements(&p),
        [
            (StmtKind::Compound, &text[text.find("{\n").unwrap()..text.len() - 1]),
            (StmtKind::Expression, "i = count;"),
            (StmtKind::If, "if (i)\n    i++;"),
            (StmtKind::Expression, "i++;"),
            (StmtKind::Return, "return i;"),
        ]
    );
    assert_eq!(p.statement(4).lines, (8, 8));
    assert!(p.statement(4).ends_function);
    assert_eq!(p.functions["main"].signature, "main ()");
    assert_eq!(p.functions["main"].offset, text.find("main").unwrap());
    assert_eq!(var(&p, 0, "count"), CType::Int(IntKind::Int));
    let names: Vec<_> = p.vars_in_scope(1).iter().map(|v| v.name.clone()).collect();
    assert_eq!(names, ["i", "count"]);
}

#[test]
fn kr_parameters_are_in_scope_with_their_types() {
    let text = "double g;\nlong\nf (g, s)\n     char *s;\n{\n  return g + *s;\n}\n\nh (a) { return a; }\n";
    let p = parse(text);
    let ret = p
        .statements
        .iter()
        .find(|s| p.source_of(s.id) == "return g + *s;")
        .unwrap();
    let vars: Vec<_> = p.vars_in_scope(ret.id).into_iter().cloned().collect();
    let names: Vec<_> = vars.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["g", "s", "g"]);
    assert_eq!(
        vars[0].ty,
        CType::Int(IntKind::Int),
        "an undeclared K&R parameter is an int"
    );
    assert!(vars[0].initialized && !vars[0].global);
    assert_eq!(vars[1].ty, CType::Pointer(Box::new(CType::Int(IntKind::Char))));
    assert_eq!(vars[2].ty, CType::Double);
    assert_eq!(p.source_of(p.roots[1]), "{ return a; }");
}

#[test]
fn attributes_of_struct_heads_are_passed_over() {
    let text = "struct __attribute__((packed)) S { unsigned short i : 1, k : 11; };\ntypedef struct __attribute ((scalar_storage_order (\"big-endian\"))) { int b; } B;\nstruct T __attribute__((aligned (8))) { int a; } t;\ntypedef struct __attribute((__may_alias__)) { short x; } U;\nstruct S s;\nint f (void) { s.k = 3; return s.k + t.a; }\n";
    let p = parse(text);
    let fields: Vec<_> = p.records["S"].iter().map(|f| (f.name.as_str(), f.bit_width)).collect();
    assert_eq!(fields, [("i", Some(1)), ("k", Some(11))]);
    assert_eq!(p.records["T"][0].ty, CType::Int(IntKind::Int));
    assert!(matches!(&p.typedefs["B"], CType::Record { .. }));
    assert!(matches!(&p.typedefs["U"], CType::Record { union: false, .. }));
    assert_eq!(statements(&p)[1], (StmtKind::Expression, "s.k = 3;"));
}

#[test]
fn int128_is_opaque() {
    let text = "typedef unsigned __int128 u128;\n__int128_t g;\nu128 h;\nint f (__int128 x) { __uint128_t y = x; y++; return 0; }\n";
    let p = parse(text);
    assert_eq!(p.typedefs["u128"], CType::Other);
    assert_eq!(var(&p, 0, "g"), CType::Other);
    assert_eq!(var(&p, 0, "h"), CType::Other);
    let vars = p.vars_in_scope(2);
    assert!(vars.iter().all(|v| v.ty == CType::Other), "{vars:?}");
    assert_eq!(p.functions["f"].signature, "int f (__int128 x)");
    assert_eq!(statements(&p)[1], (StmtKind::Expression, "y++;"));
}

#[test]
fn complex_parts_alignof_and_types_compatible_parse() {
    let text = "_Complex double z;\nfloat _Complex c;\n_Complex float d;\nint i;\nfloat r[__builtin_types_compatible_p (int, typeof (i))];\nint f (void)\n{\n  double *d = &(__real z);\n  __real__ z = 1.0;\n  __imag__ z = *d;\n  return __alignof__ (i) + __alignof (i);\n}\n";
    let p = parse(text);
    for complex in ["z", "c", "d"] {
        assert_eq!(var(&p, 0, complex), CType::Other);
    }
    assert_eq!(var(&p, 0, "r"), CType::Array(Box::new(CType::Float), None));
    let kinds: Vec<_> = statements(&p).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        kinds,
        [
            StmtKind::Compound,
            StmtKind::Expression,
            StmtKind::Expression,
            StmtKind::Return
        ]
    );
    assert_eq!(p.source_of(1), "__real__ z = 1.0;");
}

#[test]
fn empty_initializers_omitted_operands_and_top_level_asm_parse() {
    let text = "__asm__ (\"answer: movl $42, %eax\\n ret\");\nstruct P { int x; };\nint answer (void);\nint f (int a)\n{\n  struct P p = (struct P){};\n  a = a ?: p.x;\n  return a ? : answer ();\n}\n";
    let p = parse(text);
    assert_eq!(
        statements(&p)[1..],
        [
            (StmtKind::Expression, "a = a ?: p.x;"),
            (StmtKind::Return, "return a ? : answer ();")
        ]
    );
    assert!(p.functions.contains_key("answer"));
}

#[test]
fn vector_and_mode_attributes_make_types_opaque() {
    let text = "typedef int V __attribute__ ((vector_size (16)));\nV v;\nint w __attribute__ ((mode (DI)));\nint plain __attribute__ ((aligned (16)));\nstruct R { int q __attribute__ ((__mode__ (__QI__))); int n; };\nint f (V p, int m __attribute__ ((mode (HI))), int k) { return k; }\n";
    let p = parse(text);
    assert_eq!(p.typedefs["V"], CType::Other);
    assert_eq!(var(&p, 0, "v"), CType::Other);
    assert_eq!(var(&p, 0, "w"), CType::Other);
    assert_eq!(var(&p, 0, "plain"), CType::Int(IntKind::Int));
    let fields: Vec<_> = p.records["R"].iter().map(|f| f.ty.clone()).collect();
    assert_eq!(fields, [CType::Other, CType::Int(IntKind::Int)]);
    let params: Vec<_> = p.vars_in_scope(1)[..3]
        .iter()
        .map(|v| (v.name.clone(), v.ty.clone()))
        .collect();
    assert_eq!(
        params,
        [
            ("k".to_string(), CType::Int(IntKind::Int)),
            ("m".to_string(), CType::Other),
            ("p".to_string(), CType::Other)
        ]
    );
}

#[test]
fn statement_expressions_are_opaque_and_hidden_jumps_keep_statements_whole() {
    let text = "int f (int x)\n{\n  int y = ({ int t = x; t + 1; });\n  y = ({ int t = x; t * 2; });\n  for (;;)\n    y = ({ if (y > 3) break; y + 1; });\n  y += ({ int u = y; if (u) goto out; u; });\nout:\n  return y;\n}\n";
    // Every line but the function's first never ran.
    let counts = (3..=9).map(|l| (l, 0)).chain([(1, 1)]).collect();
    let p = Program::parse_parts(text, "", 0, &counts).unwrap();
    assert_eq!(
        statements(&p)[1..],
        [
            (StmtKind::Expression, "y = ({ int t = x; t * 2; });"),
            (StmtKind::For, "for (;;)\n    y = ({ if (y > 3) break; y + 1; });"),
            (StmtKind::Expression, "y = ({ if (y > 3) break; y + 1; });"),
            (StmtKind::Expression, "y += ({ int u = y; if (u) goto out; u; });"),
            (StmtKind::Labeled, "out:\n  return y;"),
            (StmtKind::Return, "return y;"),
        ],
        "no statement inside a statement expression is in the table"
    );
    let deletable: Vec<_> = p.statements.iter().map(|s| s.is_deletable()).collect();
    assert_eq!(deletable, [false, true, false, false, false, false, false]);
    // The variables of a statement expression are in no scope.
    let names: Vec<_> = p.vars_in_scope(1).iter().map(|v| v.name.clone()).collect();
    assert_eq!(names, ["y", "x"]);
    // Only the statement without a hidden jump can be transplanted.
    let mut pool = Pool::default();
    pool.add_seed(&SeedId::of_text(text), &p);
    assert_eq!(pool.entries.len(), 1);
    assert_eq!(pool.entries[0].fragment.shape.kind, StmtKind::Expression);
}

#[test]
fn labels_as_values_and_computed_gotos_are_kept_whole() {
    let text = "int f (int i)\n{\n  __label__ out;\n  static const void *l[] = { &&a, &&b };\n  static int d[] = { &&b - &&a };\n  void *p = &&a;\n  if (i && d[0])\n    p = i > 1 ? &&b : &&a;\n  i = i & &d[0] != 0;\n  goto *l[i & 1];\na:\n  return 1;\nb:\n  goto *(p);\nout:\n  return 0;\n}\n";
    // Every line but the function's first never ran.
    let counts = (3..=16).map(|l| (l, 0)).chain([(1, 1)]).collect();
    let p = Program::parse_parts(text, "", 0, &counts).unwrap();
    let table: Vec<_> = statements(&p)
        .into_iter()
        .zip(&p.statements)
        .map(|((kind, text), s)| (kind, text, s.label.as_deref(), s.is_deletable()))
        .collect();
    assert_eq!(
        table[1..],
        [
            (StmtKind::If, "if (i && d[0])\n    p = i > 1 ? &&b : &&a;", None, false),
            (StmtKind::Expression, "p = i > 1 ? &&b : &&a;", None, false),
            (StmtKind::Expression, "i = i & &d[0] != 0;", None, true),
            (StmtKind::Goto, "goto *l[i & 1];", None, true),
            (StmtKind::Labeled, "a:\n  return 1;", Some("a"), false),
            (StmtKind::Return, "return 1;", None, true),
            (StmtKind::Labeled, "b:\n  goto *(p);", Some("b"), false),
            (StmtKind::Goto, "goto *(p);", None, true),
            (StmtKind::Labeled, "out:\n  return 0;", Some("out"), false),
            (StmtKind::Return, "return 0;", None, false),
        ]
    );
    let mut pool = Pool::default();
    pool.add_seed(&SeedId::of_text(text), &p);
    assert_eq!(pool.entries.len(), 1, "only `i = i & &d[0] != 0;` may be transplanted");
}

#[test]
fn errors_after_repairs_name_the_seed_line() {
    let text = "main ()\n{\n  return 0;\n}\nint g (void *p)\n{\n  int h (void) { return 1; }\n}\n";
    let e = Program::parse_parts(text, "", 0, &Default::default()).unwrap_err();
    assert!(e.message.starts_with("syntax error at line 7,"), "{e}");
    let nested = "int f (void)\n{\n  int g (int a) { return a; }\n  return g (1);\n}\n";
    let e = Program::parse_parts(nested, "", 0, &Default::default()).unwrap_err();
    assert!(e.message.starts_with("syntax error at line 3,"), "{e}");
}
