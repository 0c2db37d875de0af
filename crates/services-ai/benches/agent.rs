//! The agent loop's own cost over a zero-latency scripted model: overhead per streamed
//! token, events per second, and the cost of one tool round trip (call, permission check,
//! execution, result, next generation).
//!
//! Run: `cargo bench -p services-ai --bench agent`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use core_models::{
    async_trait, AgentRequest, AgentService as _, RiskLevel, Tool, ToolAvailabilityContext,
    ToolCategory, ToolDefinition, ToolExecutionContext, ToolRegistry, ToolResult,
    ToolValidationResult,
};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use futures::StreamExt;
use serde_json::Value;
use services_ai::{AgentConfig, AgentEngine, InMemoryToolRegistry};
use services_ai::{ScriptedLlm, ScriptedResponse};
use std::sync::Arc;
use std::time::Duration;

struct Echo(ToolDefinition);

#[async_trait]
impl Tool for Echo {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }
    fn validate(&self, _: &Value) -> ToolValidationResult {
        ToolValidationResult::valid()
    }
    fn execution_summary(&self, _: &Value) -> String {
        "echo".into()
    }
    async fn execute(&self, ctx: ToolExecutionContext) -> ToolResult {
        ToolResult::success(ctx.parameters.to_string())
    }
}

fn agent(responses: Vec<ScriptedResponse>) -> AgentEngine {
    let echo = Echo(
        ToolDefinition::new("echo", "Echo", "echo")
            .with_category(ToolCategory::Custom)
            .with_risk(RiskLevel::Safe),
    );
    let registry: Arc<dyn ToolRegistry> = Arc::new(
        [Arc::new(echo) as Arc<dyn Tool>]
            .into_iter()
            .collect::<InMemoryToolRegistry>(),
    );
    let config = AgentConfig {
        iteration_delay_ms: 0,
        max_agent_iterations: 100,
        ..AgentConfig::default()
    };
    AgentEngine::builder(Arc::new(ScriptedLlm::new(responses)), registry)
        .config(config)
        .build()
}

async fn run(agent: AgentEngine) -> usize {
    let request = AgentRequest::new("go")
        .with_tool_context(ToolAvailabilityContext::for_workspace(std::env::temp_dir()));
    agent.process_message(request).unwrap().count().await
}

/// `n` different words (one word over and over would be stopped as a loop).
fn tokens(n: usize) -> Vec<ScriptedResponse> {
    vec![ScriptedResponse::chunks((0..n).map(|i| format!("w{i} ")))]
}

fn round_trips(n: usize) -> Vec<ScriptedResponse> {
    let mut r: Vec<ScriptedResponse> = (0..n)
        .map(|i| {
            ScriptedResponse::chunks([format!(
                "<tool_call>{{\"name\": \"echo\", \"arguments\": {{\"i\": {i}}}}}</tool_call>"
            )])
        })
        .collect();
    r.push(ScriptedResponse::chunks(["done"]));
    r
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    let mut group = c.benchmark_group("agent_per_token");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    for n in [1_000usize, 10_000] {
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter_batched(
                || agent(tokens(n)),
                |a| rt.block_on(run(a)),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();

    let events = rt.block_on(run(agent(tokens(10_000))));
    let mut group = c.benchmark_group("agent_events");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    group.throughput(Throughput::Elements(events as u64));
    group.bench_function(format!("{events}_events"), |b| {
        b.iter_batched(
            || agent(tokens(10_000)),
            |a| rt.block_on(run(a)),
            BatchSize::SmallInput,
        )
    });
    group.finish();

    let mut group = c.benchmark_group("agent_tool_round_trip");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    group.throughput(Throughput::Elements(50));
    group.bench_function("50_round_trips", |b| {
        b.iter_batched(
            || agent(round_trips(50)),
            |a| rt.block_on(run(a)),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
