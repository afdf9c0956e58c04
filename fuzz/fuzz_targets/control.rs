#![no_main]
//! Fuzz target `control`: see stackbench_hostile::TARGETS.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (stackbench_hostile::target("control").expect("a target").run)(data)
});
