//! One listener for the signals `aintern` answers, for the whole run.
//!
//! The handlers are installed once, at start, so that no signal is lost between two
//! places that wait for one: SIGINT is queued for whoever waits next ([`Interrupts::next`]:
//! it cancels the running request, or leaves); SIGTERM, SIGHUP and the other catchable
//! signals that would end the program end the process group of every command still running
//! ([`sandbox::end_all`]) and then the program.

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

/// The signals that end `aintern` (after ending every command it started): hang-up,
/// termination, and the others whose default action ends a program and that can be
/// caught. (SIGKILL cannot be: then the command's shell dies with its parent, through the
/// sandbox's parent-death signal, but what the shell started may survive.)
const ENDING: [(i32, &str); 16] = [
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGQUIT, "SIGQUIT"),
    (libc::SIGUSR1, "SIGUSR1"),
    (libc::SIGUSR2, "SIGUSR2"),
    (libc::SIGALRM, "SIGALRM"),
    (libc::SIGVTALRM, "SIGVTALRM"),
    (libc::SIGPROF, "SIGPROF"),
    (libc::SIGXCPU, "SIGXCPU"),
    (libc::SIGXFSZ, "SIGXFSZ"),
    (libc::SIGIO, "SIGIO"),
    (libc::SIGPWR, "SIGPWR"),
    (libc::SIGSTKFLT, "SIGSTKFLT"),
    (libc::SIGSYS, "SIGSYS"),
    (libc::SIGTRAP, "SIGTRAP"),
    (libc::SIGABRT, "SIGABRT"),
];

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
        // Every other signal whose default would end the program: end the commands first.
        let mut ending = Vec::new();
        for (number, name) in ENDING {
            ending.push((number, install(SignalKind::from_raw(number), name)?));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let ended = futures::future::select_all(ending.iter_mut().map(|(number, s)| {
                let number = *number;
                Box::pin(async move {
                    s.recv().await;
                    number
                })
            }));
            tokio::pin!(ended);
            loop {
                tokio::select! {
                    Some(()) = interrupt.recv() => {
                        // Nobody left to tell: end as the default handler would.
                        if tx.send(()).is_err() {
                            leave(130);
                        }
                    }
                    (number, _, _) = &mut ended => leave(128 + number),
                }
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
    crate::console::restore_terminal();
    eprintln!();
    std::process::exit(code)
}
