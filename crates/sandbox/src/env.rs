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

/// Endings (upper-cased) of names that hold secrets: `MYSQL_PWD`, `GITHUB_PAT`,
/// `SENTRY_DSN`, `SMTP_PASS`, `DB_CONNECTION_STRING`, `SIGNING_KEY`.
const SECRET_ENDINGS: [&str; 6] = [
    "_KEY",
    "_PWD",
    "_PAT",
    "_DSN",
    "_PASS",
    "_CONNECTION_STRING",
];

/// Whether a sandboxed command must not see the variable `name`: agent sockets, display
/// servers, and names that look like secrets (`*TOKEN*`, `*SECRET*`, `*PASSWORD*`,
/// `*API_KEY*`, names ending in `_KEY`, `_PWD`, `_PAT`, `_DSN`, `AWS_*`, …).
pub fn is_secret_variable(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ALWAYS.contains(&upper.as_str())
        || SECRET_PARTS.iter().any(|p| upper.contains(p))
        || SECRET_PREFIXES.iter().any(|p| upper.starts_with(p))
        || SECRET_ENDINGS.iter().any(|e| upper.ends_with(e))
}

/// Whether a variable's value carries a credential whatever its name: a URL with a
/// password in it (`postgres://user:pw@host/db`).
pub fn is_secret_value(value: &str) -> bool {
    value.split("://").skip(1).any(|rest| {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        authority
            .rsplit_once('@')
            .is_some_and(|(userinfo, _)| userinfo.contains(':'))
    })
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
            "MYSQL_PWD",
            "GITHUB_PAT",
            "SENTRY_DSN",
            "SMTP_PASS",
            "DB_CONNECTION_STRING",
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
            "PWD",
            "OLDPWD",
            "PATH",
        ] {
            assert!(!is_secret_variable(kept), "{kept}");
        }
    }

    #[test]
    fn urls_with_a_password_are_secret_values() {
        use super::is_secret_value;
        assert!(is_secret_value("postgres://u:pw@db.example/app"));
        assert!(is_secret_value("redis://:pw@host:6379"));
        assert!(!is_secret_value("https://example.com/a@b"));
        assert!(!is_secret_value("https://user@example.com"));
        assert!(!is_secret_value("/usr/bin:/bin"));
    }
}
