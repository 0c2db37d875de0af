//! Variables the configuration names as secrets — an MCP server's bearer token here —
//! reach no command, even an approved `env`, and even when `sandbox.pass_env` names them.

use super::*;

const NAME: &str = "AINTERN_TEST_REMOTE_MCP_CRED";
/// A value that does not look like a key: only its naming keeps it out.
const VALUE: &str = "harbour-lane-4471";

#[test]
fn an_mcp_servers_bearer_token_reaches_no_command() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.home.path().join("aintern")).unwrap();
    std::fs::write(
        ws.home.path().join("aintern/aintern.toml"),
        format!(
            "[sandbox]\npass_env = [\"{NAME}\"]\n\n[mcp_servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_token_env = \"{NAME}\"\nenabled = false\n"
        ),
    )
    .unwrap();
    let script = ws.script(&[
        &call("run_command", json!({"command": "env"})),
        &call(
            "run_command",
            json!({"command": format!("echo \"[${NAME}]\"")}),
        ),
        "done",
    ]);
    let out = bin(ws.home.path())
        .env(NAME, VALUE)
        .args([
            "run",
            "--json",
            "--approve",
            "all",
            "--workspace",
            ws.path(),
            "--backend",
            &script,
            "go",
        ])
        .output()
        .unwrap();
    let (events, _) = completed(&out);
    let texts = result_texts(&events);
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].contains("PATH="), "env printed nothing: {texts:?}");
    for text in &texts {
        assert!(!text.contains(VALUE), "the token reached a command: {text}");
    }
    assert!(texts[1].contains("[]"), "{texts:?}");
}
