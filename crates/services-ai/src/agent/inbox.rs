//! Messages a person sends into a running request
//! ([`core_models::AgentService::send_user_message`]), and the promise made for them: a
//! message that was accepted is never lost.
//!
//! The inbox takes messages while it is open. The loop takes them out at two points: after
//! each round of tools (seed 004's "gathering additional messages"), and when the model
//! answers without calling a tool — then, under the inbox's lock, either messages are
//! waiting (they go to the model, which is asked again after its answer) or the inbox is
//! closed in the same step, so that no message can be accepted once the request has taken
//! its final answer. Any other end of the request (cancelled, failed, a limit) closes it
//! too, and what is still in it is carried: added to the conversation and reported in a
//! `messages_carried` event ([`super::finish`]). A closed inbox refuses a message with
//! [`Error::RequestEnding`]: the sender knows it was not delivered.

use super::lock;
use core_models::Error;
use std::sync::Mutex;

/// The messages sent into one request.
#[derive(Debug)]
pub(crate) struct Inbox {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    open: bool,
    queue: Vec<String>,
}

impl Inbox {
    /// An open, empty inbox.
    pub(crate) fn open() -> Self {
        Inbox {
            state: Mutex::new(State {
                open: true,
                queue: Vec::new(),
            }),
        }
    }

    /// Take `text` while the request still takes messages.
    ///
    /// # Errors
    /// [`Error::RequestEnding`] once the inbox is closed: the message was not delivered.
    pub(crate) fn send(&self, text: String) -> Result<(), Error> {
        let mut state = lock(&self.state);
        if !state.open {
            return Err(Error::RequestEnding);
        }
        state.queue.push(text);
        Ok(())
    }

    /// The messages waiting, in the order they were sent; the inbox stays open.
    pub(crate) fn gather(&self) -> Vec<String> {
        std::mem::take(&mut lock(&self.state).queue)
    }

    /// At an answer without tool calls: the messages waiting, if there are any (the inbox
    /// stays open: the model is asked again); else the inbox is closed, in the same
    /// critical section, and nothing is returned.
    pub(crate) fn gather_or_close(&self) -> Vec<String> {
        let mut state = lock(&self.state);
        if state.queue.is_empty() {
            state.open = false;
        }
        std::mem::take(&mut state.queue)
    }

    /// Close the inbox; the messages that were still waiting.
    pub(crate) fn close(&self) -> Vec<String> {
        let mut state = lock(&self.state);
        state.open = false;
        std::mem::take(&mut state.queue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_inbox_keeps_messages_in_order_until_taken() {
        let inbox = Inbox::open();
        inbox.send("a".into()).unwrap();
        inbox.send("b".into()).unwrap();
        assert_eq!(inbox.gather(), ["a", "b"]);
        assert!(inbox.gather().is_empty());
        inbox.send("c".into()).unwrap();
        assert_eq!(inbox.gather_or_close(), ["c"], "waiting: still open");
        inbox.send("d".into()).unwrap();
        assert_eq!(inbox.close(), ["d"]);
    }

    #[test]
    fn an_answer_with_nothing_waiting_closes_the_inbox() {
        let inbox = Inbox::open();
        assert!(inbox.gather_or_close().is_empty());
        assert!(matches!(
            inbox.send("late".into()),
            Err(Error::RequestEnding)
        ));
        assert!(inbox.close().is_empty(), "a refused message is not kept");
    }

    #[test]
    fn a_closed_inbox_refuses_messages() {
        let inbox = Inbox::open();
        inbox.send("kept".into()).unwrap();
        assert_eq!(inbox.close(), ["kept"]);
        assert!(matches!(
            inbox.send("late".into()),
            Err(Error::RequestEnding)
        ));
    }
}
