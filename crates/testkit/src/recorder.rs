//! An executor that records instead of acting; it lives with the replay
//! driver in the gateway crate (`portcullis replay` uses it too).

pub use portcullis_gateway::replay::Recorder;
