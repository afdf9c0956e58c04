//! Study files: the examples parse (they are fixtures), the plan interleaves
//! variants, and bad files give one-line errors naming file, line and the fix.
//! (Running a study's plan is tested where `run_study` lives, in the results
//! crate's `study_runs`.)

use std::path::PathBuf;

use stackbench_model::study::{load_study, parse_study};
use stackbench_model::{AmqpCompress, AppProtocol, CrrClose};

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

#[test]
fn release_to_release_example_is_the_seeds_suite() {
    let s = load_study(&example("release-to-release.toml")).unwrap();
    let w: Vec<String> = s.workloads.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        w,
        [
            "RR60(4kB/4kB)",
            "CRR40(64B/8kB)",
            "STR3(1B/20MB)",
            "STR3(20MB/1B)"
        ]
    );
    assert_eq!(s.repetitions, 5);
    assert_eq!(
        s.settings.describe(),
        ["duration = 30s", "warmup = 5s", "nodelay = true"]
    );
    let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["previous", "current"]);
    assert_eq!(s.variants[1].labels["release"], "current");
    // Each machine runs one side: 4 workloads × 5 repetitions.
    let plan = s.plan(&["current".to_string()], "f").unwrap();
    assert_eq!(plan.len(), 20);
    assert!(plan
        .iter()
        .all(|p| p.variant == "current" && p.labels["release"] == "current"));
}

#[test]
fn kernel_release_example_has_one_kernel_per_variant() {
    let s = load_study(&example("kernel-release.toml")).unwrap();
    let w: Vec<String> = s.workloads.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        w,
        [
            "RR1(1B/1B)",
            "RR10(4kB/4kB)",
            "CRR10(64B/8kB)",
            "STR1(1B/2MB)"
        ]
    );
    let plan = s.plan(&[], "f").unwrap();
    assert_eq!(plan.len(), 4 * 4 * 2, "variants × workloads × repetitions");
    let setting = |v: &str, name: &str| {
        let step = plan.iter().find(|p| p.variant == v).unwrap();
        step.settings.text_of(name).unwrap()
    };
    // Patterns, resolved to the newest matching package when the study runs.
    let (k61, k612) = (
        "linux-image-6.1.0-*-cloud-amd64-unsigned",
        "linux-image-6.12.*-cloud-amd64-unsigned",
    );
    assert_eq!(setting("6.1", "kernel"), k61);
    assert_eq!(setting("6.12", "kernel"), k612);
    assert!(plan.iter().all(|p| p.settings.kernel.is_guest()));
    // Loopback in one guest, and the pair variants across a wire.
    assert_eq!(setting("6.1", "peer_kernel"), "host");
    for (v, k) in [("6.1-wire", k61), ("6.12-wire", k612)] {
        assert_eq!(setting(v, "kernel"), k);
        assert_eq!(setting(v, "peer_kernel"), k);
    }
    let wire = s
        .plan(&["6.1-wire".into(), "6.12-wire".into()], "f")
        .unwrap();
    assert_eq!(wire.len(), 2 * 4 * 2);
}

#[test]
fn smc_r_example_runs_both_transports_on_one_pair_of_612_kernels() {
    let s = load_study(&example("smc-r-vs-tcp.toml")).unwrap();
    let plan = s.plan(&[], "f").unwrap();
    assert_eq!(plan.len(), 2 * 4 * 2, "variants × workloads × repetitions");
    for step in &plan {
        let text = |n: &str| step.settings.text_of(n).unwrap();
        assert_eq!(text("kernel"), "linux-image-6.12.*+deb12-amd64-unsigned");
        assert_eq!(text("peer_kernel"), text("kernel"));
        let want = if step.variant == "tcp" { "tcp" } else { "smc" };
        assert_eq!(text("transport"), want);
    }
}

/// Every study file in `examples/` parses (labs, plans and ratings have
/// their own readers and tests).
#[test]
fn every_study_example_parses() {
    let dir = example("");
    let mut studies = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let other = ["lab-", "plan-", "ratings"]
            .iter()
            .any(|p| name.starts_with(p));
        if !name.ends_with(".toml") || other {
            continue;
        }
        load_study(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        studies += 1;
    }
    assert!(studies >= 8, "{studies} study examples");
}

#[test]
fn best_practices_example_sets_socket_options() {
    let s = load_study(&example("best-practices.toml")).unwrap();
    assert_eq!(s.variants.len(), 4);
    let plan = s.plan(&[], "f").unwrap();
    let last = plan.iter().find(|p| p.variant == "buffers-256kB").unwrap();
    let sock = last.settings.socket_options();
    assert!(sock.nodelay && sock.waitall && !sock.quickack);
    assert_eq!(sock.sndbuf_bytes, Some(256 * 1024));
    assert_eq!(sock.rcvbuf_bytes, Some(256 * 1024));
    assert_eq!(sock.crr_close, CrrClose::Server);
    let defaults = plan.iter().find(|p| p.variant == "defaults").unwrap();
    assert_eq!(defaults.settings.socket_options(), Default::default());
}

#[test]
fn quick_example_is_small() {
    let s = load_study(&example("quick.toml")).unwrap();
    let plan = s.plan(&[], "f").unwrap();
    assert_eq!(plan[0].settings.text_of("duration").unwrap(), "1s");
    assert_eq!(plan[0].settings.text_of("warmup").unwrap(), "200ms");
    assert_eq!(s.plan(&[], "f").unwrap().len(), 2 * 2 * 3);
}

#[test]
fn plan_interleaves_variants_within_each_repetition() {
    let text = r#"
name = "order"
workloads = ["RR1(1B/1B)", "CRR1(1B/1B)"]
repetitions = 2
[[variant]]
name = "A"
[[variant]]
name = "B"
nodelay = true
"#;
    let plan = parse_study(text, "order.toml")
        .unwrap()
        .plan(&[], "order.toml")
        .unwrap();
    let order: Vec<String> = plan
        .iter()
        .map(|s| format!("{}:{}:{}", s.repetition, s.workload, s.variant))
        .collect();
    assert_eq!(
        order,
        [
            "1:RR1(1B/1B):A",
            "1:RR1(1B/1B):B",
            "1:CRR1(1B/1B):A",
            "1:CRR1(1B/1B):B",
            "2:RR1(1B/1B):A",
            "2:RR1(1B/1B):B",
            "2:CRR1(1B/1B):A",
            "2:CRR1(1B/1B):B",
        ]
    );
    assert_eq!(plan[1].settings.nodelay, Some(true));
    assert_ne!(plan[0].settings.nodelay, Some(true));
    assert_eq!(plan[1].given.describe(), ["nodelay = true"]);
    assert_eq!(plan[7].index, 7);
    assert_eq!(plan[7].total, 8);
    let l = &plan[5].labels;
    assert_eq!(
        (
            l["study"].as_str(),
            l["variant"].as_str(),
            l["repetition"].as_str()
        ),
        ("order", "B", "2")
    );
}

#[test]
fn a_file_without_variants_has_one_named_default() {
    let s = parse_study("name = \"x\"\nworkloads = [\"RR1(1B/1B)\"]\n", "x.toml").unwrap();
    assert_eq!(s.variants.len(), 1);
    assert_eq!(s.variants[0].name, "default");
    assert_eq!(s.repetitions, 5);
}

#[test]
fn bad_files_get_one_line_errors_with_file_line_and_fix() {
    let head = "name = \"bad\"\nworkloads = [\"RR1(1B/1B)\"]\n";
    let cases: &[(&str, &str)] = &[
        (
            "nodely = true\n",
            "bad.toml:3:1: unknown key 'nodely': use name, description, workloads, repetitions, [sweep], [[variant]], or a setting: duration, warmup,",
        ),
        (
            "duration = \"10 sec\"\n",
            "bad.toml:3:12: duration = 10 sec: bad duration '10 sec'",
        ),
        (
            "sndbuf = \"256kb\"\n",
            "bad.toml:3:10: sndbuf = 256kb: bad size '256kb': unknown size unit 'kb'",
        ),
        (
            "crr_close = \"later\"\n",
            "bad.toml:3:13: crr_close = later: unknown close mode: use server, client or abort",
        ),
        (
            "repetitions = 0\n",
            "bad.toml:3:15: bad repetitions 0: use 1 to 1000",
        ),
        (
            "nodelay = \"yes\"\n",
            "bad.toml:3:11: nodelay = yes: not a boolean: use true or false",
        ),
        (
            "client_cpus = \"0-x\"\n",
            "bad.toml:3:15: client_cpus = 0-x: bad CPU list '0-x'",
        ),
        (
            "[[variant]]\nname = \"A\"\n[[variant]]\nname = \"A\"\n",
            "bad.toml:6:8: duplicate variant name 'A'",
        ),
        (
            "[[variant]]\nname = \"A\"\nwaitall = 1\n",
            "bad.toml:5:11: waitall = 1: not a boolean: use true or false",
        ),
        (
            "[[variant]]\nname = \"A\"\nlabel = { k = \"v\" }\n",
            "bad.toml:5:1: unknown key 'label': use name, description, labels, or a setting:",
        ),
        ("name = \"again\"\n", "bad.toml:3:1: duplicate key"),
        // Each of these used to be accepted.
        ("[sweep]\n", "bad.toml:3:1: empty [sweep]: give one or two settings to sweep"),
        (
            "[[variant]]\nname = \"A\"\nlabels = { study = \"mine\" }\n",
            "bad.toml:5:12: label 'study' is reserved: every study run is stored with the labels study, variant, repetition, workload, sweep",
        ),
        (
            "[[variant]]\nname = \"A\"\nlabels = { variant = \"x\" }\n",
            "bad.toml:5:12: label 'variant' is reserved",
        ),
        (
            "[[variant]]\nname = \"A\"\nlabels = { \"sweep.clients\" = \"1\" }\n",
            "bad.toml:5:12: label 'sweep.clients' is reserved",
        ),
    ];
    for (tail, want) in cases {
        let err = parse_study(&format!("{head}{tail}"), "bad.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(want), "{tail:?}\n got: {err}\nwant: {want}");
        assert!(!err.contains('\n'), "one line: {err}");
    }
    let err = parse_study(
        "name = \"x\"\nworkloads = [\"RR1(1B/1B)\", \"RR10(4kb/4kB)\"]\n",
        "w.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("w.toml:2:28: unknown size unit 'kb' in 'RR10(4kb/4kB)'"),
        "{err}"
    );
    let err = parse_study(
        "name = \"x\"\nworkloads = [\"RR1(1kB/1kB)\", \"CRR1(1B/1B)\", \"RR1(1024B/1024B)\"]\n",
        "w.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(
            "w.toml:2:45: duplicate workload 'RR1(1024B/1024B)' (the same as workload 1 of the list, RR1(1kB/1kB)): remove it"
        ),
        "{err}"
    );
    // Each valid alone, contradictory together: refused when planned,
    // whichever of the study, a variant or a sweep point gives them.
    let s = parse_study(
        "name = \"x\"\nworkloads = [\"RR1(1B/1B)\"]\ntransport = \"unix\"\n[[variant]]\nname = \"v6\"\nipv6 = true\n",
        "u.toml",
    )
    .unwrap();
    let err = s.plan(&[], "u.toml").unwrap_err().to_string();
    assert!(
        err.starts_with("u.toml: variant 'v6': ipv6 = true: transport unix uses a socket file"),
        "{err}"
    );
    let err = parse_study("name = \"x\"\nworkloads = []\n", "w.toml")
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("w.toml:2:13: empty workloads"), "{err}");
    let err = parse_study("workloads = [\"RR1(1B/1B)\"]\n", "w.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing key 'name'"), "{err}");
    let err = parse_study("name = \"x\"\nworkloads = [\"RR1(1B/1B)\"\n", "w.toml")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("w.toml:2:") || err.starts_with("w.toml:3:"),
        "{err}"
    );
    let s = parse_study(head, "ok.toml").unwrap();
    let err = s.plan(&["nope".into()], "ok.toml").unwrap_err().to_string();
    assert_eq!(
        err,
        "ok.toml: unknown variant 'nope' in --variant: the file defines default"
    );
}

#[test]
fn tn3270_capacity_example_is_the_capacity_documents_population_sweep() {
    use stackbench_model::settings::{AppProtocol, ResponderApp};
    use stackbench_model::tn3270_script::Script;
    use stackbench_model::ThinkTime;
    let s = load_study(&example("tn3270-capacity.toml")).unwrap();
    let plan = s.plan(&[], "f").unwrap();
    let records: Vec<_> = plan.iter().filter(|p| p.variant == "records").collect();
    let workloads: Vec<String> = records.iter().map(|p| p.workload.to_string()).collect();
    assert_eq!(
        workloads,
        [
            "RR8K(100B/800B)",
            "RR16K(100B/800B)",
            "RR32K(100B/800B)",
            "RR64K(100B/800B)",
            "RR128K(100B/800B)",
            "RR256K(100B/800B)"
        ]
    );
    assert_eq!(plan.len(), 2 * 6, "variants × populations");
    // On the protocol: TN3270 terminals, both variants.
    assert!(plan
        .iter()
        .all(|p| p.settings.protocol == AppProtocol::Tn3270));
    let step = records[5];
    assert_eq!(
        step.settings.think,
        Some(ThinkTime::Constant(std::time::Duration::from_secs(30)))
    );
    assert_eq!(step.settings.ramp.map(|r| r.per_s()), Some(20_000.0));
    // N/(R+Z) at 256K users with R ≪ Z: ≈ 262,144 ÷ 30 s = 8,738 tr/s.
    let n = f64::from(step.workload.classes[0].clients);
    assert!((n / 30.0 - 8738.0).abs() < 1.0);
    assert!(records.iter().all(|p| p.settings.tn3270_script.is_none()));
    // The script variant drives the demo application with a script that
    // parses for the terminals' screen (its path from the repository root).
    let script = plan.iter().find(|p| p.variant == "script").unwrap();
    assert_eq!(script.settings.responder_tn3270_app, ResponderApp::Demo);
    let file = script.settings.tn3270_script.as_ref().unwrap().0.clone();
    let text = std::fs::read_to_string(example("").join("..").join(&file)).unwrap();
    let parsed = Script::parse(&file, &text, script.settings.tn3270_options().screen()).unwrap();
    let names: Vec<&str> = parsed.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["logon", "inquiry", "back", "logoff"]);
}

/// The logon-cost study: CRR (a logon per transaction) and RR (none) over
/// raw payloads and three TN3270 modes of the same sizes.
#[test]
fn tn3270_logon_example_compares_the_modes_over_a_raw_baseline() {
    use stackbench_model::settings::{AppProtocol, ResponderTn3270e, Tn3270e};
    use stackbench_model::Kind;
    let s = load_study(&example("tn3270-logon.toml")).unwrap();
    let plan = s.plan(&[], "f").unwrap();
    assert_eq!(plan.len(), 4 * 2 * 5, "variants × workloads × repetitions");
    let of = |v: &str| {
        let step = plan.iter().find(|p| p.variant == v).unwrap();
        let o = step.settings.tn3270_options();
        (step.settings.protocol, o.tn3270e, o.responder)
    };
    assert_eq!(of("raw").0, AppProtocol::Raw);
    assert_eq!(
        of("tn3270e"),
        (AppProtocol::Tn3270, Tn3270e::On, ResponderTn3270e::Offer)
    );
    assert_eq!(
        of("tn3270"),
        (AppProtocol::Tn3270, Tn3270e::Auto, ResponderTn3270e::Refuse)
    );
    assert_eq!(
        of("tn3270-fallback"),
        (AppProtocol::Tn3270, Tn3270e::Off, ResponderTn3270e::Offer)
    );
    let kinds: Vec<Kind> = s.workloads.iter().map(|w| w.classes[0].kind).collect();
    assert_eq!(kinds, [Kind::Crr, Kind::Rr]);
}

/// The TLS placements side by side, all in one guest kernel (kTLS needs
/// CONFIG_TLS): clear, TLS in the application, in the stack (kTLS, the
/// AT-TLS analogue) and in a proxy.
#[test]
fn tls_stack_example_runs_every_tls_placement_in_one_guest_kernel() {
    let s = load_study(&example("tls-stack.toml")).unwrap();
    let plan = s.plan(&[], "f").unwrap();
    assert_eq!(plan.len(), 4 * 2 * 2, "variants × workloads × repetitions");
    assert!(plan.iter().all(|p| p.settings.kernel.is_guest()));
    let mode = |v: &str| {
        let step = plan.iter().find(|p| p.variant == v).unwrap();
        step.settings.text_of("tls_mode").unwrap()
    };
    assert_eq!(mode("tls-inline"), "inline");
    assert_eq!(mode("tls-ktls"), "ktls");
    assert_eq!(mode("tls-proxy"), "sidecar");
}

#[test]
fn mq_examples_plan_their_variants_over_the_amqp_settings() {
    let s = load_study(&example("mq-persistence.toml")).unwrap();
    let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["non-persistent", "persistent"]);
    // 2 workloads × 5 client counts × 2 variants × 3 repetitions.
    let plan = s.plan(&[], "f").unwrap();
    assert_eq!(plan.len(), 60);
    assert!(plan.iter().all(|p| p.settings.protocol == AppProtocol::Amqp
        && p.settings.target.as_ref().map(|t| t.0.as_str()) == Some("amqp://127.0.0.1:5672")));
    assert_eq!(
        plan.iter().filter(|p| p.settings.amqp_persistent).count(),
        30
    );

    let s = load_study(&example("mq-channel-options.toml")).unwrap();
    let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        ["clear", "tls", "tls-rekey-1MB", "zlib-fast", "zlib-high"]
    );
    // 2 workloads × 2 bodies × 5 variants × 3 repetitions.
    let plan = s.plan(&[], "f").unwrap();
    assert_eq!(plan.len(), 60);
    let compressed = |c| {
        plan.iter()
            .filter(|p| p.settings.amqp_compress == c)
            .count()
    };
    assert_eq!(compressed(AmqpCompress::ZlibFast), 12);
    assert_eq!(compressed(AmqpCompress::ZlibHigh), 12);
}
