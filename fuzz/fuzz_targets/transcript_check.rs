#![no_main]
libfuzzer_sys::fuzz_target!(
    |data: &[u8]| portcullis_testkit::transcript_harness::transcript_check(data)
);
