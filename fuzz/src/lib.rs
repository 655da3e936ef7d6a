//! What every fuzz target links besides its harness: the allocator of the
//! nightly's build without a sanitizer.
//!
//! The harnesses build and drop many small JSON values per execution, and
//! under glibc's allocator `malloc`, `free` and their consolidation took a
//! fifth of `wrap_session`'s profile; mimalloc makes that build's
//! executions up to 1.75 times as fast. Only that build sets the cfg: under
//! AddressSanitizer every allocation must go through the sanitizer's own
//! allocator, or its heap checks see nothing, so `cargo fuzz run` and the
//! nightly's ASan share keep the system allocator.

#[cfg(portcullis_fast_alloc)]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
