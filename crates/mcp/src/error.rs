//! The crate's errors.

/// What went wrong with an MCP server, in words a user understands.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server could not be started or did not complete the handshake.
    #[error("the MCP server '{server}' could not start: {message}")]
    Start {
        /// The server's name.
        server: String,
        /// Why.
        message: String,
    },
    /// The server did not start within its startup timeout.
    #[error("the MCP server '{server}' did not start within {secs:.1}s (startup_timeout_ms)")]
    StartTimeout {
        /// The server's name.
        server: String,
        /// The timeout, in seconds.
        secs: f64,
    },
}
