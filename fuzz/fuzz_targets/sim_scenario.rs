#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| stn_sim::fuzzing::sim_scenario(data));
