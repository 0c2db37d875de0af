//! The real MCP servers the tests run against: installed by `scripts/fetch-mcp-servers`
//! and found through `AINTERN_MCP_TEST_SERVERS` (the folder it prints).

use std::path::PathBuf;

/// The folder of the test servers; `None` (with a notice) when it is not set, unless
/// `AINTERN_REQUIRE_MCP_SERVERS` is set (as `scripts/test` sets it): then the test fails.
///
/// # Panics
/// When the servers are required and not there.
pub fn dir() -> Option<PathBuf> {
    match std::env::var_os("AINTERN_MCP_TEST_SERVERS") {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var_os("AINTERN_REQUIRE_MCP_SERVERS").is_some() => {
            panic!("AINTERN_MCP_TEST_SERVERS is not set (scripts/fetch-mcp-servers installs them)")
        }
        None => {
            eprintln!("skipped: AINTERN_MCP_TEST_SERVERS is not set (scripts/fetch-mcp-servers)");
            None
        }
    }
}

/// The program of an installed Node server (`mcp-server-everything`,
/// `mcp-server-filesystem`).
pub fn node_bin(dir: &std::path::Path, name: &str) -> PathBuf {
    dir.join("node_modules/.bin").join(name)
}
