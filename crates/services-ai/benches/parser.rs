//! Tool-call parser throughput: 1 MB of plain text and a 1 MB tool call, fed in 1-, 4- and
//! 64-byte tokens, and the growth from 256 KB to 1 MB (linear means ~4×).
//!
//! Run: `cargo bench -p services-ai --bench parser`. Throughput is reported in bytes/s.

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

criterion_group!(benches, throughput, growth);
criterion_main!(benches);
