//! End-to-end tests of ccfuzz live in `tests/tests/`.
