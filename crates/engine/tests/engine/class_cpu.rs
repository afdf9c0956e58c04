//! CPU per class in a mix: on shared worker threads each
//! class shows the mix's CPU, marked `mix`, without per-transaction figures,
//! and the outcome carries the mix's; with `class_workers` each class runs on
//! driver and responder threads of its own and its CPU is its own.

use stackbench_record::{CpuAttribution, CpuMethod};

use super::{assert_exact, config, responder, run};

const MIX: &str = "RR1(100B/800B)+STR2(1B/1MB)";

#[test]
fn a_mix_on_shared_workers_has_no_per_class_cpu_per_transaction() {
    let h = responder("127.0.0.1:0");
    let out = run(&h, &config(MIX, 200));
    assert_exact(&out, 200);
    for c in &out.classes {
        let cpu = c.cpu.as_ref().expect("cpu figures");
        assert_eq!(cpu.attribution, CpuAttribution::Mix, "{}", c.notation);
        for side in [&cpu.client, &cpu.server] {
            let side = side.as_ref().expect("both sides sampled");
            assert_eq!(side.attribution, CpuAttribution::Mix);
            assert_eq!(side.cpu_us_per_tran, None, "{}", c.notation);
            assert!(side.cpu_seconds > 0.0);
        }
    }
    let mix = out.mix_cpu.expect("the mix's own CPU");
    let client = mix.client.unwrap();
    assert_eq!(
        client.cpu_us_per_tran,
        Some(client.cpu_seconds * 1e6 / 400.0)
    );
}

#[test]
fn class_workers_give_each_class_its_own_cpu_on_both_sides() {
    let h = responder("127.0.0.1:0");
    let mut cfg = config(MIX, 200);
    cfg.class_workers = true;
    let out = run(&h, &cfg);
    assert_exact(&out, 200);
    // The mix's own figure stays beside the classes'.
    let mix = out.mix_cpu.as_ref().expect("the mix's own CPU");
    assert_eq!(mix.attribution, CpuAttribution::Mix);
    let per_tran: Vec<(f64, f64)> = out
        .classes
        .iter()
        .map(|c| {
            let cpu = c.cpu.as_ref().expect("cpu figures");
            assert_eq!(cpu.attribution, CpuAttribution::Class, "{}", c.notation);
            let (client, server) = (cpu.client.as_ref().unwrap(), cpu.server.as_ref().unwrap());
            for side in [client, server] {
                assert_eq!(side.method, CpuMethod::Threads, "{}", c.notation);
                assert_eq!(side.attribution, CpuAttribution::Class);
                assert!(side.cpu_seconds > 0.0, "{}: {side:?}", c.notation);
            }
            (
                client.cpu_us_per_tran.unwrap(),
                server.cpu_us_per_tran.unwrap(),
            )
        })
        .collect();
    // A 1 MB transfer costs more than a 100 B/800 B exchange, on each side.
    assert!(per_tran[1].0 > per_tran[0].0, "{per_tran:?}");
    assert!(per_tran[1].1 > per_tran[0].1, "{per_tran:?}");
}
