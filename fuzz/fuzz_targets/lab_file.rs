#![no_main]
//! Fuzz target `lab_file`: see stackbench_hostile::TARGETS.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (stackbench_hostile::target("lab_file")
        .expect("a target")
        .run)(data)
});
