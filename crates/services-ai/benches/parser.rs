//! Tool-call parser throughput: 1 MB of plain text and a 1 MB tool call, fed in 1-, 4- and
//! 64-byte tokens, and the growth from 256 KB to 1 MB (linear means ~4×).
//!
//! The `formats` group parses 256 KB of replies in each model family's own call format
//! (text, reasoning and calls) in 4-byte tokens; Hermes is the anchor to compare with.
//!
//! Run: `cargo bench -p aintern-services-ai --bench parser`. Throughput is reported in bytes/s.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use services_ai::{FunctionCallParser, ToolCatalog};
use std::hint::black_box;
use std::time::Duration;

const MB: usize = 1 << 20;

/// Prose of about `size` bytes with the odd marker-like character in it.
fn plain_text(size: usize) -> String {
    let line = "The quick brown fox reads notes.txt, compares a < b and `x` {not json} [ok]. ";
    let mut s = String::with_capacity(size + line.len());
    while s.len() < size {
        s.push_str(line);
        if s.len().is_multiple_of(7) {
            s.push('\n');
        }
    }
    s
}

/// One Hermes tool call of about `size` bytes (a file write with a big content string).
fn big_call(size: usize) -> String {
    let mut content = String::with_capacity(size);
    while content.len() < size {
        content.push_str("fn main() { println!(\\\"{}\\\", \\\"é\\\"); } // ``` </tool_call>\\n");
    }
    format!("Writing it.\n<tool_call>\n{{\"name\": \"write_file\", \"arguments\": {{\"path\": \"a.rs\", \"content\": \"{content}\"}}}}\n</tool_call>\nDone.")
}

/// Cut into tokens of `size` bytes at character boundaries.
fn tokens(input: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::with_capacity(input.len() / size + 1);
    let mut start = 0;
    while start < input.len() {
        let mut end = (start + size).min(input.len());
        while !input.is_char_boundary(end) {
            end += 1;
        }
        out.push(&input[start..end]);
        start = end;
    }
    out
}

fn run(parser: &FunctionCallParser, tokens: &[&str]) -> usize {
    let mut s = parser.streaming();
    let mut events = 0;
    for t in tokens {
        events += s.process_token(t).len();
    }
    events + s.flush().len()
}

fn throughput(c: &mut Criterion) {
    let parser = FunctionCallParser::new(ToolCatalog::Empty);
    let inputs = [
        ("plain_text_1MB", plain_text(MB)),
        ("tool_call_1MB", big_call(MB)),
    ];
    for (name, input) in &inputs {
        assert!(!parser.parse(input).is_empty() || name.starts_with("plain"));
        let mut group = c.benchmark_group(*name);
        group.throughput(Throughput::Bytes(input.len() as u64));
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(6));
        for size in [1usize, 4, 64] {
            let toks = tokens(input, size);
            group.bench_with_input(BenchmarkId::new("token_bytes", size), &toks, |b, toks| {
                b.iter(|| run(&parser, black_box(toks)))
            });
        }
        group.finish();
    }
}

/// One reply per format: some reasoning or text, and two calls.
const REPLIES: &[(&str, &str)] = &[
    ("hermes", "<think>Need two files.</think>Reading.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"Cargo.toml\"}}\n</tool_call>\n"),
    ("qwen3-coder", "Reading.\n<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=read_file>\n<parameter=path>\nCargo.toml\n</parameter>\n</function>\n</tool_call>\n"),
    ("glm", "<think>Need two files.</think>Reading.<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>src/main.rs</arg_value>\n</tool_call><tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>Cargo.toml</arg_value>\n</tool_call>\n"),
    ("harmony", "<|channel|>analysis<|message|>Need two files.<|end|><|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{\"path\": \"src/main.rs\"}<|call|><|start|>assistant<|channel|>final<|message|>Reading.<|return|>"),
    ("deepseek-v3.1", "<think>Need two files.</think>Reading.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"src/main.rs\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"Cargo.toml\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>\n"),
    ("kimi-k2", "Reading.<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{\"path\": \"src/main.rs\"}<|tool_call_end|><|tool_call_begin|>functions.read_file:1<|tool_call_argument_begin|>{\"path\": \"Cargo.toml\"}<|tool_call_end|><|tool_calls_section_end|>\n"),
    ("minimax-m2", "<think>Need two files.</think>\n<minimax:tool_call>\n<invoke name=\"read_file\">\n<parameter name=\"path\">src/main.rs</parameter>\n</invoke>\n<invoke name=\"read_file\">\n<parameter name=\"path\">Cargo.toml</parameter>\n</invoke>\n</minimax:tool_call>\n"),
    ("mistral", "[THINK]Need two files.[/THINK]Reading.[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}, {\"name\": \"read_file\", \"arguments\": {\"path\": \"Cargo.toml\"}}]\n"),
    ("command-r7b", "<|START_THINKING|>Need two files.<|END_THINKING|><|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"read_file\", \"parameters\": {\"path\": \"src/main.rs\"}}]<|END_ACTION|>\n"),
    ("lfm2", "Reading.<|tool_call_start|>[read_file(path=\"src/main.rs\"), read_file(path=\"Cargo.toml\")]<|tool_call_end|>\n"),
    ("deepseek-v3.2", "<think>Need two files.</think>Reading.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"read_file\">\n<｜DSML｜parameter name=\"path\" string=\"true\">src/main.rs</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"read_file\">\n<｜DSML｜parameter name=\"path\" string=\"true\">Cargo.toml</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>\n"),
    ("apertus", "<|inner_prefix|>Need two files.<|inner_suffix|>Reading.<|tools_prefix|>[{\"read_file\": {\"path\": \"src/main.rs\"}}, {\"read_file\": {\"path\": \"Cargo.toml\"}}]<|tools_suffix|>\n"),
    ("functionary-v3.2", "all\nReading.>>>read_file\n{\"path\": \"src/main.rs\"}>>>read_file\n{\"path\": \"Cargo.toml\"}\n"),
];

fn formats(c: &mut Criterion) {
    let mut group = c.benchmark_group("formats");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(4));
    for (name, reply) in REPLIES {
        let format = services_ai::format_by_name(name).expect("a registered format");
        let options = services_ai::TemplateProfile {
            format,
            reasoning: None,
        }
        .parser_options(false);
        let parser = FunctionCallParser::new(ToolCatalog::Empty).with_options(options);
        assert!(!parser.parse(reply).is_empty(), "{name} finds no call");
        // Replies one after another, each parsed as its own output.
        let count = (MB / 4) / reply.len() + 1;
        let toks = tokens(reply, 4);
        group.throughput(Throughput::Bytes((reply.len() * count) as u64));
        group.bench_with_input(BenchmarkId::new("reply_256KB", name), &toks, |b, toks| {
            b.iter(|| {
                (0..count)
                    .map(|_| run(&parser, black_box(toks)))
                    .sum::<usize>()
            })
        });
    }
    group.finish();
}

fn growth(c: &mut Criterion) {
    let parser = FunctionCallParser::new(ToolCatalog::Empty);
    let mut group = c.benchmark_group("growth");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(6));
    for (kind, make) in [
        ("plain_text", plain_text as fn(usize) -> String),
        ("tool_call", big_call),
    ] {
        for size in [MB / 4, MB] {
            let input = make(size);
            let toks = tokens(&input, 4);
            group.throughput(Throughput::Bytes(input.len() as u64));
            group.bench_with_input(BenchmarkId::new(kind, size), &toks, |b, toks| {
                b.iter(|| run(&parser, black_box(toks)))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, throughput, formats, growth);
criterion_main!(benches);
