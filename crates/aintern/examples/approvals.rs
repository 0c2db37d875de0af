//! An application that runs the agent and answers its approval requests in code.
//!
//! The model is scripted, so the run is the same every time: it writes a file (a call that
//! needs approval: the app allows writes of `.txt` files), then tries to delete it with a
//! command (the app denies it), then answers. Run it with
//!
//!     cargo run -p aintern --example approvals

// An example prints what it shows.
#![allow(clippy::print_stdout)]

use aintern::prelude::*;

/// A Hermes-style tool call, as a model would write it.
fn call(tool: &str, arguments: Value) -> String {
    format!(
        "<tool_call>{}</tool_call>",
        json!({ "name": tool, "arguments": arguments })
    )
}

#[aintern::tokio::main(crate = "aintern::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = tempfile::tempdir()?;
    let model = ScriptedLlm::from_texts([
        call(
            "write_file",
            json!({"path": "todo.txt", "content": "Buy milk\n"}),
        ),
        call("run_command", json!({"command": "rm todo.txt"})),
        "I wrote todo.txt; deleting it was not allowed.".to_string(),
    ]);
    let agent = Agent::builder()
        .model(model)
        .workspace(workspace.path())
        .approval(ApprovalPolicy::Ask) // every approval comes to this loop
        .build()?;

    let mut run = agent.run("Make me a todo list, then clean up")?;
    let mut denied = 0;
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::ApprovalRequest(a) => {
                let call = &a.request;
                let path = call.parameters.get("path").and_then(Value::as_str);
                if call.tool_id == "write_file" && path.is_some_and(|p| p.ends_with(".txt")) {
                    println!("approve: {}", a.summary());
                    a.approve()?;
                } else {
                    println!("deny:    {}", a.summary());
                    a.deny(Some("this app only lets the agent write text files".into()))?;
                }
            }
            AgentEvent::ToolResult(r) => {
                println!("result:  {}", r.summary());
                denied += usize::from(r.result.denied);
            }
            AgentEvent::AgentComplete(done) => {
                println!("answer:  {}", done.final_response);
                println!("summary: {}", done.summary());
            }
            _ => {}
        }
    }

    // The example checks itself, so that CI notices when it stops doing what it shows.
    let written = std::fs::read_to_string(workspace.path().join("todo.txt"))?;
    if written != "Buy milk\n" || denied != 1 {
        return Err(format!("unexpected outcome: todo.txt = {written:?}, {denied} denied").into());
    }
    Ok(())
}
