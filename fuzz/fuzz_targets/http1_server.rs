#![no_main]
//! Fuzz target `http1_server`: see stackbench_hostile::TARGETS.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (stackbench_hostile::target("http1_server")
        .expect("a target")
        .run)(data)
});
