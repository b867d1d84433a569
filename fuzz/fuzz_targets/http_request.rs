#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stn_server::fuzzing::http_request(data));
