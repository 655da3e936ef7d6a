#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| portcullis_testkit::authz_harness::authz_expansion(data));
