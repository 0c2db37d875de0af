//! Configuration: the seed's defaults, layering, and every validation rule.

use services_ai::{AgentConfig, ConfigLoader, Error};
use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn toml_file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new().suffix(".toml").tempfile().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

#[test]
fn defaults_are_the_seeds() {
    let c = AgentConfig::default();
    assert!(c.enabled);
    assert_eq!(c.max_agent_iterations, 10);
    assert_eq!(c.max_parallel_tool_calls, 3);
    assert_eq!(c.tool_execution_timeout(), Duration::from_secs(120));
    assert_eq!(c.agent_request_timeout(), Duration::from_secs(600));
    assert_eq!(c.iteration_delay(), Duration::from_millis(100));
    assert_eq!(c.approval_timeout(), Duration::from_secs(300));
    assert!(c.include_tool_results_in_history);
    assert_eq!(c.max_tool_result_tokens, 4096);
    assert!(!c.auto_retry_failed_tools);
    // What the agent is, for any model that is offered tools (no longer the seed's
    // chat-assistant text).
    assert!(c.tool_use_system_prompt.starts_with("You are AIntern"));
    assert!(
        c.tool_definition_format.contains("{name}")
            && c.tool_definition_format.contains("{parameters}")
    );
    assert!(c.tool_call_format.contains("```tool_call"));
    assert!(c.enable_streaming);
    assert_eq!(c.streaming_buffer_size, 1);
    assert_eq!(c.budget.max_total_tokens, None);
    assert!(c.validate().is_ok());
    // Loading with nothing set gives the defaults.
    assert_eq!(
        ConfigLoader::new()
            .env_source(HashMap::new())
            .load()
            .unwrap(),
        c
    );
}

#[test]
fn layers_file_then_environment_then_overrides() {
    let base = toml_file("max_agent_iterations = 20\nmax_parallel_tool_calls = 5\n[budget]\nmax_cost = 1.5\nprompt_cost_per_1k_tokens = 0.01\n");
    let top = toml_file("max_parallel_tool_calls = 6\n");
    let c = ConfigLoader::new()
        .file(base.path())
        .file(top.path())
        .env_source(env(&[
            ("AINTERN_MAX_AGENT_ITERATIONS", "30"),
            ("AINTERN_BUDGET__MAX_TOTAL_TOKENS", "20000"),
            ("AINTERN_AUTO_RETRY_FAILED_TOOLS", "true"),
            ("OTHER_MAX_AGENT_ITERATIONS", "99"),
        ]))
        .set("iteration_delay_ms", 0)
        .load()
        .unwrap();
    assert_eq!(c.max_agent_iterations, 30, "environment wins over the file");
    assert_eq!(
        c.max_parallel_tool_calls, 6,
        "a later file wins over an earlier one"
    );
    assert_eq!(c.budget.max_cost, Some(1.5), "nested file keys");
    assert_eq!(
        c.budget.max_total_tokens,
        Some(20000),
        "nested environment keys"
    );
    assert!(c.auto_retry_failed_tools);
    assert_eq!(c.iteration_delay_ms, 0, "overrides win over everything");
    assert_eq!(
        c.tool_execution_timeout_ms, 120_000,
        "untouched keys keep their defaults"
    );
}

#[test]
fn missing_optional_file_is_fine_missing_required_file_is_an_error() {
    let c = ConfigLoader::new()
        .optional_file("/nonexistent/aintern.toml")
        .env_source(HashMap::new())
        .load()
        .unwrap();
    assert_eq!(c, AgentConfig::default());
    let err = ConfigLoader::new()
        .file("/nonexistent/aintern.toml")
        .env_source(HashMap::new())
        .load()
        .unwrap_err();
    assert!(matches!(err, Error::ConfigLoad(_)), "{err}");
}

#[test]
fn malformed_or_mistyped_values_are_load_errors() {
    for text in [
        "max_agent_iterations = [",
        "max_agent_iterations = \"many\"",
        "max_agent_iterations = -3",
    ] {
        let f = toml_file(text);
        let err = ConfigLoader::new()
            .file(f.path())
            .env_source(HashMap::new())
            .load()
            .unwrap_err();
        assert!(matches!(err, Error::ConfigLoad(_)), "{text}: {err}");
    }
    let err = ConfigLoader::new()
        .env_source(env(&[("AINTERN_MAX_PARALLEL_TOOL_CALLS", "lots")]))
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("max_parallel_tool_calls"), "{err}");
}

/// Apply `change` to the defaults and expect exactly the rule on `field` to break, with
/// a message that contains `mentions`.
fn check_rule(change: impl FnOnce(&mut AgentConfig), field: &str, mentions: &str) {
    let mut c = AgentConfig::default();
    change(&mut c);
    let errors = c.validation_errors();
    assert_eq!(errors.len(), 1, "{field}: {errors:?}");
    assert_eq!(errors[0].field, field);
    assert!(errors[0].message.contains(mentions), "{}", errors[0]);
}

#[test]
fn each_of_the_seeds_eight_rules() {
    check_rule(
        |c| c.max_agent_iterations = 0,
        "max_agent_iterations",
        "at least 1",
    );
    check_rule(
        |c| c.max_agent_iterations = 101,
        "max_agent_iterations",
        "1 to 100",
    );
    check_rule(
        |c| c.max_parallel_tool_calls = 0,
        "max_parallel_tool_calls",
        "at least 1",
    );
    check_rule(
        |c| c.max_parallel_tool_calls = 11,
        "max_parallel_tool_calls",
        "1 to 10",
    );
    check_rule(
        |c| c.tool_execution_timeout_ms = 4_999,
        "tool_execution_timeout_ms",
        "5 seconds",
    );
    check_rule(
        |c| c.agent_request_timeout_ms = 119_999,
        "agent_request_timeout_ms",
        ">= tool_execution_timeout_ms",
    );
    check_rule(
        |c| c.max_tool_result_tokens = 99,
        "max_tool_result_tokens",
        "at least 100",
    );
    check_rule(
        |c| c.tool_use_system_prompt = "  \n".into(),
        "tool_use_system_prompt",
        "cannot be empty",
    );
    // Boundaries are allowed.
    let c = AgentConfig {
        max_agent_iterations: 100,
        max_parallel_tool_calls: 10,
        tool_execution_timeout_ms: 5_000,
        agent_request_timeout_ms: 5_000,
        max_tool_result_tokens: 100,
        ..AgentConfig::default()
    };
    assert!(c.validate().is_ok());
}

#[test]
fn budget_rules() {
    check_rule(
        |c| c.budget.max_total_tokens = Some(0),
        "budget.max_total_tokens",
        "at least 1",
    );
    check_rule(
        |c| c.budget.max_wall_time_ms = Some(0),
        "budget.max_wall_time_ms",
        "at least 1",
    );
    check_rule(
        |c| {
            c.budget.max_cost = Some(-1.0);
            c.budget.prompt_cost_per_1k_tokens = 1.0;
        },
        "budget.max_cost",
        "positive",
    );
    check_rule(
        |c| c.budget.max_cost = Some(2.0),
        "budget.max_cost",
        "price",
    );
    check_rule(
        |c| c.budget.completion_cost_per_1k_tokens = f64::NAN,
        "budget.completion_cost_per_1k_tokens",
        "zero or a positive",
    );
    let mut c = AgentConfig::default();
    c.budget.prompt_cost_per_1k_tokens = 0.5;
    c.budget.completion_cost_per_1k_tokens = 1.5;
    assert!((c.budget.cost(2000, 1000) - 2.5).abs() < 1e-9);
}

#[test]
fn every_failure_is_reported_at_once() {
    let f = toml_file("max_agent_iterations = 0\nmax_parallel_tool_calls = 50\ntool_execution_timeout_ms = 1000\nmax_tool_result_tokens = 5\ntool_use_system_prompt = \"\"\n");
    let err = ConfigLoader::new()
        .file(f.path())
        .env_source(HashMap::new())
        .load()
        .unwrap_err();
    let Error::InvalidConfig(errors) = &err else {
        panic!("{err}")
    };
    let fields: Vec<&str> = errors.iter().map(|e| e.field).collect();
    assert_eq!(
        fields,
        [
            "max_agent_iterations",
            "max_parallel_tool_calls",
            "tool_execution_timeout_ms",
            "max_tool_result_tokens",
            "tool_use_system_prompt"
        ]
    );
    let text = err.to_string();
    for field in fields {
        assert!(text.contains(field), "{text}");
    }
    // Unvalidated loading still returns the values.
    let c = ConfigLoader::new()
        .file(f.path())
        .env_source(HashMap::new())
        .load_unvalidated()
        .unwrap();
    assert_eq!(c.max_agent_iterations, 0);
}

/// An application's defaults replace the built-in ones and stay below files, variables
/// and overrides.
#[test]
fn application_defaults_sit_between_built_in_defaults_and_every_other_layer() {
    let load = |loader: services_ai::ConfigLoader| {
        loader
            .env_source(std::collections::HashMap::new())
            .default_value("tool_prompt_style", "compact")
            .load()
            .unwrap()
            .tool_prompt_style
    };
    use services_ai::ToolPromptStyle::{Compact, Full};
    assert_eq!(load(services_ai::ConfigLoader::new()), Compact);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("aintern.toml");
    std::fs::write(&file, "tool_prompt_style = \"full\"\n").unwrap();
    assert_eq!(load(services_ai::ConfigLoader::new().file(&file)), Full);
    assert_eq!(
        load(services_ai::ConfigLoader::new().set("tool_prompt_style", "full")),
        Full
    );
    let env = std::collections::HashMap::from([(
        "AINTERN_TOOL_PROMPT_STYLE".to_string(),
        "full".to_string(),
    )]);
    assert_eq!(
        services_ai::ConfigLoader::new()
            .default_value("tool_prompt_style", "compact")
            .env_source(env)
            .load()
            .unwrap()
            .tool_prompt_style,
        Full
    );
}

#[test]
fn formatters_load_from_toml_and_are_validated() {
    let file = toml_file(
        "[formatters.rustfmt]\nextensions = [\"rs\"]\ncommand = [\"rustfmt\", \"--edition\", \"2021\"]\n",
    );
    let c = ConfigLoader::new()
        .file(file.path())
        .env_source(HashMap::new())
        .load()
        .unwrap();
    let rustfmt = &c.formatters["rustfmt"];
    assert_eq!(rustfmt.extensions, ["rs"]);
    assert_eq!(rustfmt.command, ["rustfmt", "--edition", "2021"]);
    let formatter = |extensions: &[&str], command: &[&str]| services_ai::FormatterConfig {
        extensions: extensions.iter().map(|s| s.to_string()).collect(),
        command: command.iter().map(|s| s.to_string()).collect(),
    };
    check_rule(
        |c| {
            c.formatters.insert("empty".into(), formatter(&["rs"], &[]));
        },
        "formatters",
        "empty: command must name a program",
    );
    check_rule(
        |c| {
            c.formatters
                .insert("nothing".into(), formatter(&[], &["fmt"]));
        },
        "formatters",
        "nothing: extensions must list at least one",
    );
    let typo = toml_file("[formatters.x]\nextension = [\"rs\"]\ncommand = [\"fmt\"]\n");
    let err = ConfigLoader::new()
        .file(typo.path())
        .env_source(HashMap::new())
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("extension"), "{err}");
}

#[test]
fn the_iteration_delay_and_the_sandbox_settings_are_validated() {
    check_rule(
        |c| c.iteration_delay_ms = 60_001,
        "iteration_delay_ms",
        "60000",
    );
    assert!(AgentConfig {
        iteration_delay_ms: 60_000,
        ..AgentConfig::default()
    }
    .validation_errors()
    .is_empty());
    for (path, mentions) in [
        ("relative/cache", "absolute"),
        ("/", "whole"),
        ("~", "whole"),
        ("~/", "whole"),
        ("/..", "whole"),
    ] {
        check_rule(
            |c| c.sandbox.writable_paths = vec![path.to_string()],
            "sandbox.writable_paths",
            mentions,
        );
    }
    check_rule(
        |c| c.sandbox.deny_read = vec!["secrets".into()],
        "sandbox.deny_read",
        "absolute",
    );
    check_rule(
        |c| c.sandbox.pass_env = vec!["A=B".into()],
        "sandbox.pass_env",
        "not an environment variable",
    );
    let mut ok = AgentConfig::default();
    ok.sandbox.writable_paths = vec!["~/.cache/pip".into(), "/var/cache/build".into()];
    ok.sandbox.deny_read = vec!["~/private".into()];
    assert!(
        ok.validation_errors().is_empty(),
        "{:?}",
        ok.validation_errors()
    );

    let file = toml_file(
        "[sandbox]\nmode = \"read-only\"\nnetwork = true\nfallback = \"deny\"\nwritable_paths = [\"~/.cache\"]\n",
    );
    let c = ConfigLoader::new()
        .env_source(env(&[("AINTERN_SANDBOX__FALLBACK", "unsandboxed")]))
        .file(file.path())
        .load()
        .unwrap();
    assert_eq!(c.sandbox.mode, core_models::SandboxMode::ReadOnly);
    assert!(c.sandbox.network);
    assert_eq!(
        c.sandbox.fallback,
        core_models::SandboxFallback::Unsandboxed
    );
    assert_eq!(c.sandbox.writable_paths, ["~/.cache"]);
    let bad = toml_file("[sandbox]\nmode = \"yolo\"\n");
    assert!(ConfigLoader::new().file(bad.path()).load().is_err());
    let unknown = toml_file("[sandbox]\nmodes = \"read-only\"\n");
    assert!(ConfigLoader::new().file(unknown.path()).load().is_err());
}

#[test]
fn the_backend_section_loads_and_is_validated() {
    let file = toml_file(
        "[backend]\nkind = \"openai\"\nurl = \"http://127.0.0.1:8080/v1\"\nmodel = \"qwen\"\n\
         api_key_env = \"OPENAI_API_KEY\"\ntool_mode = \"text\"\nheaders = { \"X-Team\" = \"a\" }\n",
    );
    let c = ConfigLoader::new()
        .env_source(env(&[("AINTERN_BACKEND__MAX_RETRIES", "5")]))
        .file(file.path())
        .load()
        .unwrap();
    assert_eq!(c.backend.kind, services_ai::BackendKind::Openai);
    assert_eq!(c.backend.tool_mode, services_ai::ToolMode::Text);
    assert_eq!(c.backend.max_retries, 5);
    assert_eq!(c.backend.headers["X-Team"], "a");
    assert!(
        !format!("{:?}", c.backend).contains("\"a\""),
        "header values are not printed"
    );

    let openai = |c: &mut AgentConfig| c.backend.kind = services_ai::BackendKind::Openai;
    check_rule(openai, "backend.url", "is required");
    check_rule(
        |c| {
            openai(c);
            c.backend.url = Some("127.0.0.1:8080".into());
        },
        "backend.url",
        "http://",
    );
    check_rule(
        |c| c.backend.api_key_env = Some("MY KEY".into()),
        "backend.api_key_env",
        "not an environment variable",
    );
    check_rule(
        |c| {
            c.backend.headers.insert("X-Bad\nName".into(), "v".into());
        },
        "backend.headers",
        "not an HTTP header name",
    );
    check_rule(
        |c| {
            c.backend
                .headers
                .insert("X-Ok".into(), "a\r\nInjected: 1".into());
        },
        "backend.headers",
        "line break",
    );
    check_rule(
        |c| c.backend.idle_timeout_ms = 0,
        "backend.idle_timeout_ms",
        "from 1",
    );
    check_rule(
        |c| c.backend.first_token_timeout_ms = u64::MAX,
        "backend.first_token_timeout_ms",
        "a day",
    );
    check_rule(
        |c| c.backend.max_retries = 11,
        "backend.max_retries",
        "at most 10",
    );
    check_rule(
        |c| c.backend.slot_files = 0,
        "backend.slot_files",
        "from 1 to 4096",
    );
    let unknown = toml_file("[backend]\nkindd = \"openai\"\n");
    assert!(
        ConfigLoader::new().file(unknown.path()).load().is_err(),
        "unknown keys are errors"
    );
}
