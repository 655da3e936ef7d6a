//! An executor that records instead of acting.

use std::sync::Mutex;

use crate::{AuthorizedAction, Executor, Outcome};

/// Records every [`AuthorizedAction`] and returns a canned outcome.
#[derive(Debug)]
pub struct Recorder {
    outcome: Outcome,
    calls: Mutex<Vec<AuthorizedAction>>,
    /// False for a recorder that only answers: a streamed replay's sink
    /// sees every action as it runs, and holding them all would make its
    /// memory grow with the capture.
    keeps_calls: bool,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new(Outcome::success("recorded"))
    }
}

impl Recorder {
    /// A recorder answering every call with `outcome`.
    pub fn new(outcome: Outcome) -> Self {
        Self {
            outcome,
            calls: Mutex::new(Vec::new()),
            keeps_calls: true,
        }
    }

    /// The default recorder's answers, with no record kept: [`Self::calls`]
    /// stays empty.
    pub fn without_history() -> Self {
        Self {
            keeps_calls: false,
            ..Self::default()
        }
    }

    /// The outcome returned for every call (a session may echo its text,
    /// so leak checks count it as something the test supplied).
    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }

    /// Everything recorded so far, in order.
    pub fn calls(&self) -> Vec<AuthorizedAction> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Executor for Recorder {
    fn execute(&self, action: &AuthorizedAction) -> Outcome {
        if self.keeps_calls {
            self.calls
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(action.clone());
        }
        self.outcome.clone()
    }
}
