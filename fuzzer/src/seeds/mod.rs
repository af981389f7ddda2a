//! Seeds: normalized ([`normalize`]), profiled and vetted (with sanitizers, [`vetting`]; no
//! definitions under the C library's names, [`reserved`]) into the store ([`maker`]) or rejected
//! with a reason ([`rejection`]), from a
//! directory ([`directory`], old C repaired by [`repair`]) or generated during a campaign by csmith or Orange ([`generator`]).

pub mod directory;
pub mod generator;
pub mod maker;
pub mod normalize;
pub mod rejection;
pub mod repair;
pub mod reserved;
pub mod vetting;

pub use directory::profile_directory;
pub use maker::{parse_gcov, SeedMaker, SeedTiming};
pub use rejection::{Rejection, Vetted};
