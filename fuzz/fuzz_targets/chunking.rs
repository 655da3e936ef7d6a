#![no_main]
use portcullis_fuzz as _;
libfuzzer_sys::fuzz_target!(|data: &[u8]| portcullis_testkit::harness::chunking(data));
