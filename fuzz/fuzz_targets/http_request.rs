#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stn_tokio::server::fuzzing::http_request(data));
