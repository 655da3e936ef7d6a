//! Resource limits applied while reading inbound frames.

/// Default cap on one frame, excluding its newline: 4 MiB.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 4 * 1024 * 1024;
/// Default cap on JSON nesting depth (the top-level value is depth 1).
pub const DEFAULT_MAX_DEPTH: usize = 64;
/// serde_json's own recursion guard is 128 levels; a deeper configured limit
/// could never be reached, so configured depths are clamped to it.
pub const HARD_MAX_DEPTH: usize = 127;
/// Default cap on the JSON values one frame may hold: 16384. The costliest
/// shape, objects of one member nested in one another, takes about 900
/// bytes a value once a `tools/call`'s arguments are also copied for the
/// schema validator, so a frame at the cap takes about 15 MiB whatever
/// `max_frame_bytes` is.
pub const DEFAULT_MAX_VALUES: usize = 16 * 1024;

/// Limits for the inbound boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted frame in bytes, excluding the terminating `\n` (and
    /// the optional `\r` before it).
    pub max_frame_bytes: usize,
    /// Deepest accepted nesting of arrays and objects; the top-level value
    /// counts as depth 1.
    pub max_depth: usize,
    /// Most JSON values one frame may hold: every scalar, array and object
    /// counts one, at any depth, also where the reader keeps nothing (an
    /// object's keys are covered by its members' values). The value past
    /// it is refused before it is built, so what one frame's tree takes is
    /// bounded by this, whatever the frame's size.
    pub max_values: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_depth: DEFAULT_MAX_DEPTH,
            max_values: DEFAULT_MAX_VALUES,
        }
    }
}

impl Limits {
    /// The depth limit actually enforced.
    pub fn effective_depth(&self) -> usize {
        self.max_depth.clamp(1, HARD_MAX_DEPTH)
    }
}
