#![no_main]
//! Fuzz target `token_prove`: see stackbench_hostile::TARGETS.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (stackbench_hostile::target("token_prove")
        .expect("a target")
        .run)(data)
});
