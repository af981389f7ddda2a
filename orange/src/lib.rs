//! Orange3 (Nagai, Hashimoto, Ishiura): random arithmetic test programs whose expected values are
//! computed while generating, with undefined behaviour removed by operation flipping and
//! insertion, and an optional rounding-free floating-point mode; strengthened with YARPGen's
//! generation policies (Livinskii, Babokin, Regehr). The integer semantics come from the
//! C-semantics core shared with Hermes.
//!
//! LibAFL pieces: [`OrangeProgram`] is an input, [`OrangeGenerator`] a generator, and
//! [`mutators`] change a program and settle it again so that its expected values stay exact.
//! [`minimize`] shrinks a program that shows an error, as the Orange3 paper's section 5 does.

pub mod generate;
pub mod minimize;
pub mod mutators;
pub mod program;
pub mod render;
pub mod settle;

pub use generate::{generate, GenOptions, Policies};
pub use minimize::{minimize, Minimized};
pub use mutators::{Change, OrangeGenerator, OrangeMutator};
pub use program::OrangeProgram;
