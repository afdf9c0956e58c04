#![no_main]
//! Fuzz target `agent_wire`: see stackbench_hostile::TARGETS.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (stackbench_hostile::target("agent_wire")
        .expect("a target")
        .run)(data)
});
