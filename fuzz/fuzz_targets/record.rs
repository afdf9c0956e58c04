#![no_main]
//! Fuzz target `record`: see stackbench_hostile::TARGETS.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (stackbench_hostile::target("record").expect("a target").run)(data)
});
