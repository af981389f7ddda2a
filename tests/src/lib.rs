//! Checks of the whole workspace (`tests/tidy.rs`) and studies (`studies/`); the end-to-end
//! tests of the `ccfuzz` binary are the `ccfuzz` package's (`fuzzer/tests/`).
