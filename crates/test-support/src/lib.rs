//! test-support
