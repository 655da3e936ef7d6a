//! The seam between the boundary and the world.

use crate::authz::AuthorizedAction;

/// What an action produced, as the tool result the client will see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Text content for the `CallToolResult`.
    pub text: String,
    /// Whether the call failed (`isError: true`).
    pub is_error: bool,
}

impl Outcome {
    /// A successful result.
    pub fn success(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
        }
    }

    /// A failed result (tool error, transport failure, timeout).
    pub fn failure(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
        }
    }
}

/// Runs authorized actions. It accepts nothing but an [`AuthorizedAction`],
/// which only the authorizer can construct.
pub trait Executor: Send + Sync {
    /// Perform the action and report its outcome. Must not panic on any
    /// outcome of the remote side.
    fn execute(&self, action: &AuthorizedAction) -> Outcome;
}
