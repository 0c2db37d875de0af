//! The shortest embedding (the manual's chapter "Embedding"), kept here so that it is
//! built and run (scripts/test runs it in an empty folder; a test checks the manual shows
//! this file's code).

// An example prints what it shows.
#![allow(clippy::print_stdout)]

use aintern::prelude::*;

#[aintern::tokio::main(crate = "aintern::tokio")]
async fn main() -> Result<(), aintern::Error> {
    let model = ScriptedLlm::from_texts([
        r#"<tool_call>{"name": "write_file", "arguments": {"path": "todo.txt", "content": "milk"}}</tool_call>"#,
        "Done: todo.txt lists milk.",
    ]);
    let agent = Agent::builder()
        .model(model)
        .workspace(".") // the folder the tools may read and change (required)
        .build()?;
    let mut run = agent.run("Start a todo list with milk")?;
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::ApprovalRequest(call) => call.approve()?, // or call.deny(Some(why))
            AgentEvent::AgentComplete(done) => println!("{}", done.final_response),
            _ => {}
        }
    }
    Ok(())
}
