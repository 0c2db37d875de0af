//! AIntern's workspace integration tests: one binary, one module per feature.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub,
    clippy::print_stdout
)]

mod agent;
mod agent_machine;
mod config;
mod emitter;
mod events;
mod models;
mod parser;
mod parser_formats;
mod parser_peers;
mod parser_props;
mod parser_recovered;
mod permissions;
mod project;
mod security;
mod serde_roundtrip;
mod test_support;
mod tools;
mod turn_machine;
