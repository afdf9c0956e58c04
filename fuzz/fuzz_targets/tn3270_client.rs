#![no_main]
//! Fuzz target `tn3270_client`: see stackbench_hostile::TARGETS.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (stackbench_hostile::target("tn3270_client")
        .expect("a target")
        .run)(data)
});
