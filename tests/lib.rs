//! Intentionally empty: this package only holds the `it` integration-test binary.
