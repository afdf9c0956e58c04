#![no_main]
//! Fuzz target `token_admit`: see stackbench_hostile::TARGETS.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (stackbench_hostile::target("token_admit")
        .expect("a target")
        .run)(data)
});
