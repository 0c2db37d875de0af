//! One listener for the signals `aintern` answers, for the whole run.
//!
//! The handlers are installed once, at start, so that no signal is lost between two
//! places that wait for one: SIGINT is queued for whoever waits next ([`Interrupts::next`]:
//! it cancels the running request, or leaves); SIGTERM and SIGHUP end the process group of
//! every command still running ([`sandbox::end_all`]) and then the program.

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

/// The interrupts (SIGINT) received, in order.
pub(crate) struct Interrupts {
    rx: mpsc::UnboundedReceiver<()>,
}

impl Interrupts {
    /// Install the handlers. Must run inside the async runtime.
    pub(crate) fn listen() -> Result<Self, String> {
        let install = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|e| format!("cannot listen for {name}: {e}"))
        };
        let mut interrupt = install(SignalKind::interrupt(), "SIGINT")?;
        let mut terminate = install(SignalKind::terminate(), "SIGTERM")?;
        let mut hangup = install(SignalKind::hangup(), "SIGHUP")?;
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let code = tokio::select! {
                    Some(()) = interrupt.recv() => {
                        // Nobody left to tell: end as the default handler would.
                        if tx.send(()).is_err() {
                            130
                        } else {
                            continue;
                        }
                    }
                    Some(()) = terminate.recv() => 143,
                    Some(()) = hangup.recv() => 129,
                    else => return,
                };
                leave(code);
            }
        });
        Ok(Interrupts { rx })
    }

    /// The next SIGINT (at once when one came while nobody waited).
    pub(crate) async fn next(&mut self) {
        if self.rx.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }
}

/// End every command still running, then the program, with `code`.
pub(crate) fn leave(code: i32) -> ! {
    sandbox::end_all();
    eprintln!();
    std::process::exit(code)
}
