//! The default model, Qwen2.5-Coder-1.5B-Instruct, answering a question about a file:
//! it chooses its tool itself.
//!
//! It runs on the CPU in this process. Fetch the model once with the project's
//! `scripts/fetch-model` (about 1.1 GB), then
//!
//!     cargo run -p aintern --features llama --example embedded
//!     cargo run -p aintern --features llama --example embedded -- DIR "QUESTION"

// An example prints what it shows.
#![allow(clippy::print_stdout)]

use aintern::prelude::*;

#[aintern::tokio::main(crate = "aintern::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let demo = tempfile::tempdir()?;
    let (workspace, question) = match (args.next(), args.next()) {
        (Some(dir), Some(question)) => (std::path::PathBuf::from(dir), question),
        _ => {
            std::fs::write(
                demo.path().join("notes.txt"),
                "The meeting is on Friday at 10.\n",
            )?;
            (
                demo.path().to_path_buf(),
                "What does notes.txt say?".to_string(),
            )
        }
    };

    let model = aintern::load_embedded_model().await?;
    let agent = Agent::builder()
        .model(model)
        .workspace(&workspace)
        // Reads run without asking; anything else is refused.
        .approval(ApprovalPolicy::ApproveSafe)
        .build()?;

    let reply = agent.ask(question).await?;
    for r in &reply.tool_results {
        println!("[{}]", r.summary());
    }
    println!("{}", reply.text());
    println!("({})", reply.completion.summary());
    if reply.text().trim().is_empty() {
        return Err("the model gave no answer".into());
    }
    Ok(())
}
