//! Answers as data: the embedded model reads a file, then answers as a Rust type — its
//! answer held to the type's JSON Schema by a grammar, so it is always valid JSON of that
//! shape (whether the values are right is up to the model: a 135M model is often wrong).
//!
//!     cargo run -p aintern --features llama --example structured

// An example prints what it shows.
#![allow(clippy::print_stdout)]

use aintern::prelude::*;
use aintern::schemars::JsonSchema;

/// What the answer must hold.
#[derive(serde::Deserialize, JsonSchema)]
#[schemars(crate = "aintern::schemars")]
struct Project {
    /// The project's name.
    name: String,
    /// Whether it is still running.
    active: bool,
    /// The people on the team.
    #[schemars(length(min = 1))]
    team: Vec<String>,
}

#[aintern::tokio::main(crate = "aintern::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("project.txt"),
        "Project: Lighthouse\nStatus: active\nTeam: Ana, Ben, Chen\n",
    )?;
    let agent = Agent::builder()
        .model(aintern::load_embedded_model().await?)
        .workspace(dir.path())
        // Reads run without asking; anything else is refused.
        .approval(ApprovalPolicy::ApproveSafe)
        .build()?;
    let project: Project = agent
        .ask_json("Read project.txt and describe the project.")
        .await?;
    println!(
        "name: {}\nactive: {}\nteam: {}",
        project.name,
        project.active,
        project.team.join(" | ")
    );
    if project.team.is_empty() {
        return Err("the schema asks for at least one team member".into());
    }
    Ok(())
}
