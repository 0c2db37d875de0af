//! Which environment variables a sandboxed command does not get.

/// Variables removed whatever their name says: they lead to agents and display servers
/// that act with the user's authority.
const ALWAYS: [&str; 10] = [
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "KRB5CCNAME",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GIT_ASKPASS",
];

/// Parts of a name (upper-cased) that mark a secret.
const SECRET_PARTS: [&str; 11] = [
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "API_KEY",
    "APIKEY",
    "ACCESS_KEY",
    "PRIVATE_KEY",
    "CREDENTIAL",
    "_AUTH",
];

/// Prefixes (upper-cased) of cloud providers' variables, which hold keys.
const SECRET_PREFIXES: [&str; 3] = ["AWS_", "AZURE_", "ARM_CLIENT_"];

/// Whether a sandboxed command must not see the variable `name`: agent sockets, display
/// servers, and names that look like secrets (`*TOKEN*`, `*SECRET*`, `*PASSWORD*`,
/// `*API_KEY*`, names ending in `_KEY`, `AWS_*`, …).
pub fn is_secret_variable(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ALWAYS.contains(&upper.as_str())
        || SECRET_PARTS.iter().any(|p| upper.contains(p))
        || SECRET_PREFIXES.iter().any(|p| upper.starts_with(p))
        || upper.ends_with("_KEY")
}

#[cfg(test)]
mod tests {
    use super::is_secret_variable;

    #[test]
    fn secrets_are_recognised_and_the_rest_kept() {
        for secret in [
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_PROFILE",
            "db_password",
            "NPM_CONFIG__AUTH",
            "SSH_AUTH_SOCK",
            "DBUS_SESSION_BUS_ADDRESS",
            "STRIPE_SECRET",
            "SIGNING_KEY",
            "CARGO_REGISTRY_TOKEN",
        ] {
            assert!(is_secret_variable(secret), "{secret}");
        }
        for kept in [
            "PATH",
            "HOME",
            "CARGO_HOME",
            "RUSTUP_TOOLCHAIN",
            "LANG",
            "TERM",
            "USER",
            "PYTHONPATH",
            "NODE_PATH",
            "MONKEY",
        ] {
            assert!(!is_secret_variable(kept), "{kept}");
        }
    }
}
