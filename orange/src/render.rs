//! C text of an Orange program: the variables with their modifiers, the assignments, a check of
//! every expected value, and a checksum line. The program exits with 1 when a check fails, so
//! it tests itself; the checksum makes it usable for differential testing too.

use crate::program::{OrangeProgram, Ty, Var};

/// The checksum folding of the t-variables, the same at generation and in the program.
fn fold(checksum: u64, value: i128) -> u64 {
    checksum.wrapping_mul(31).wrapping_add(value as u64)
}

impl OrangeProgram {
    /// What the program prints when every check passes.
    pub fn expected_output(&self) -> String {
        let checksum = self.assignments.iter().fold(0u64, |c, a| {
            let term = match self.vars[a.target].ty {
                Ty::Int(_) => a.expected,
                Ty::Float(_) => a.expected.abs(),
            };
            fold(c, term)
        });
        format!("checksum {checksum:016x}\n")
    }

    pub fn to_c(&self) -> String {
        let mut out = String::from("#include <stdio.h>\n\n");
        let declaration = |var: &Var| {
            let mut line = String::new();
            if var.is_static {
                line.push_str("static ");
            }
            if var.is_const {
                line.push_str("const ");
            }
            if var.is_volatile {
                line.push_str("volatile ");
            }
            line.push_str(&format!(
                "{} {} = {};\n",
                var.ty.spelling(),
                var.name,
                var.ty.literal(var.init)
            ));
            line
        };
        for var in self.vars.iter().filter(|v| v.global) {
            out.push_str(&declaration(var));
        }
        out.push_str("\nint main(void) {\n");
        for var in self.vars.iter().filter(|v| !v.global) {
            out.push_str("  ");
            out.push_str(&declaration(var));
        }
        out.push_str("  unsigned long long checksum = 0;\n  int failures = 0;\n\n");
        for assignment in &self.assignments {
            out.push_str("  ");
            out.push_str(&self.vars[assignment.target].name);
            out.push_str(" = ");
            assignment.expr.render(&self.vars, &mut out);
            out.push_str(";\n");
        }
        out.push('\n');
        for assignment in &self.assignments {
            let var = &self.vars[assignment.target];
            let value = match var.ty {
                Ty::Int(_) => var.name.clone(),
                // Exact integers, possibly beyond long long: the magnitude converts exactly.
                Ty::Float(_) => format!("({0} < 0 ? -{0} : {0})", var.name),
            };
            out.push_str(&format!(
                "  if ({} != {}) {{ printf(\"NG {}\\n\"); failures++; }}\n  checksum = checksum * 31 + (unsigned long long){value};\n",
                var.name,
                var.ty.literal(assignment.expected),
                var.name,
            ));
        }
        out.push_str("  printf(\"checksum %016llx\\n\", checksum);\n  return failures != 0;\n}\n");
        out
    }
}
