#![no_main]
use portcullis_fuzz as _;
libfuzzer_sys::fuzz_target!(
    |data: &[u8]| portcullis_testkit::transcript_harness::transcript_check(data)
);
