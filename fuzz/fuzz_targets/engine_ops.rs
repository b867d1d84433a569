#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stn_proto::fuzzing::engine_ops(data));
