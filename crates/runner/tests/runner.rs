//! The runner against an in-process responder on loopback (the run's
//! `target`), as `stackbench run --target` drives `stackbench serve`: what
//! was testable only by spawning the binary — repetitions and their mean,
//! the max-rate search's steps, sweeps that stop at an incomplete point,
//! session reuse, the observer's calls, refusals before any run. Runs are
//! bounded by a transaction count, never timed.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use stackbench_engine::{Progress, Responder, ResponderConfig, ResponderHandle, RunConfig};
use stackbench_model::settings::RunSettings;
use stackbench_model::sweep::{Sweep, SweepDim};
use stackbench_model::Workload;
use stackbench_record::WarningRecord;
use stackbench_runner::find_rate::{find_max_rate, Search};
use stackbench_runner::sweep::{resolve_sweep, run_sweep};
use stackbench_runner::{resolve, Observer, RunError, Runner};

fn responder() -> ResponderHandle {
    let config = ResponderConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        cpus: vec![],
        token: None,
        limits: Default::default(),
    };
    Responder::bind(config).unwrap().spawn().unwrap()
}

/// Settings for a short count-bounded run against `target`.
fn settings(target: &ResponderHandle, transactions: u64) -> RunSettings {
    let mut s = RunSettings::default();
    s.set("target", &target.addr().to_string()).unwrap();
    s.set("transactions", &transactions.to_string()).unwrap();
    s
}

fn workload(text: &str) -> Vec<Workload> {
    vec![text.parse().unwrap()]
}

/// A flag that lives as long as the test process (the runner borrows it).
fn flag() -> &'static AtomicBool {
    Box::leak(Box::new(AtomicBool::new(false)))
}

/// Records what the runner reports; sets `stop` when run number
/// `stop_at_start` starts, as Ctrl-C during that run would.
#[derive(Default)]
struct Recorder {
    started: Vec<String>,
    progress: usize,
    finished: usize,
    notes: Vec<String>,
    warnings: Vec<WarningRecord>,
    stop_at_start: Option<(usize, &'static AtomicBool)>,
}

impl Observer for Recorder {
    fn started(&mut self, cfg: &RunConfig) {
        self.started.push(cfg.workload.to_string());
        if let Some((n, stop)) = self.stop_at_start {
            if self.started.len() == n {
                stop.store(true, Ordering::Relaxed);
            }
        }
    }
    fn progress(&mut self, _: &Progress) {
        self.progress += 1;
    }
    fn finished(&mut self) {
        self.finished += 1;
    }
    fn note(&mut self, line: &str) {
        self.notes.push(line.to_string());
    }
    fn warning(&mut self, w: &WarningRecord) {
        self.warnings.push(w.clone());
    }
    fn guest_stderr(&mut self, _: &[u8]) {}
}

fn input_message(e: RunError) -> String {
    match e {
        RunError::Input(m) => m,
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn a_run_is_recorded_and_the_observer_sees_each_step() {
    let r = responder();
    let plan = resolve(settings(&r, 500), workload("RR2(1B/1B)"), false, true).unwrap();
    let (mut rec, stop) = (Recorder::default(), flag());
    let record = Runner::new(&mut rec, stop).execute(&plan).unwrap();
    assert!(record.complete, "{:?}", record.incomplete_reason);
    assert_eq!(record.responder, "remote");
    assert_eq!(record.classes.len(), 1);
    assert_eq!(record.classes[0].transactions, 500);
    assert_eq!(
        record.settings.target.as_ref().unwrap().0,
        r.addr().to_string()
    );
    assert_eq!(rec.started, ["RR2(1B/1B)"]);
    assert_eq!(rec.finished, 1);
    assert_eq!(rec.notes.len(), 1, "{:?}", rec.notes);
    assert!(
        rec.notes[0].starts_with("driver on CPUs") && rec.notes[0].contains(&r.addr().to_string()),
        "{:?}",
        rec.notes
    );
    // Every warning shown was stored, and the other way round.
    assert_eq!(rec.warnings, record.warnings);
}

#[test]
fn plans_with_the_same_responder_share_one_session() {
    let r = responder();
    let plan = resolve(settings(&r, 200), workload("RR1(1B/1B)"), false, true).unwrap();
    static OPENED: AtomicUsize = AtomicUsize::new(0);
    let (mut rec, stop) = (Recorder::default(), flag());
    let mut runner = Runner::new(&mut rec, stop).on_session_open(|| {
        OPENED.fetch_add(1, Ordering::Relaxed);
    });
    for _ in 0..3 {
        assert!(runner.execute(&plan).unwrap().complete);
    }
    drop(runner);
    // One placement line and one idle baseline: the session was opened once.
    assert_eq!(OPENED.load(Ordering::Relaxed), 1);
    assert_eq!(rec.notes.len(), 1, "{:?}", rec.notes);
    assert_eq!(rec.started.len(), 3);
}

#[test]
fn repetitions_average_the_complete_runs_and_leave_the_cut_one_out() {
    let r = responder();
    let mut s = settings(&r, 300);
    s.set("repeat", "3").unwrap();
    let plan = resolve(s, workload("RR1(1B/1B)"), false, false).unwrap();
    let stop = flag();
    let mut rec = Recorder {
        stop_at_start: Some((3, stop)),
        ..Recorder::default()
    };
    let record = Runner::new(&mut rec, stop).execute(&plan).unwrap();
    assert_eq!(rec.started.len(), 3, "the third repetition started");
    assert!(
        !record.complete,
        "an interrupted repetition makes the run incomplete"
    );
    let class = &record.classes[0];
    // The two complete repetitions only: each counted 300 transactions.
    assert_eq!(class.transactions, 300);
    let reps = class.repetitions.as_ref().expect("repetitions summarised");
    assert_eq!(reps.runs.len(), 2, "{reps:?}");
    let mean = reps.runs.iter().map(|v| v.rate_tps).sum::<f64>() / 2.0;
    assert!(
        (class.rate_tps - mean).abs() <= 1e-6 * mean,
        "{} vs {mean}",
        class.rate_tps
    );
}

#[test]
fn a_run_interrupted_before_any_repetition_keeps_what_it_measured() {
    let r = responder();
    let plan = resolve(
        settings(&r, 100_000_000),
        workload("RR1(1B/1B)"),
        false,
        false,
    )
    .unwrap();
    let stop = flag();
    let mut rec = Recorder {
        stop_at_start: Some((1, stop)),
        ..Recorder::default()
    };
    let record = Runner::new(&mut rec, stop).execute(&plan).unwrap();
    assert!(!record.complete);
    assert!(record.incomplete_reason.is_some());
    assert_eq!(record.classes.len(), 1, "the partial class is kept");
    assert!(record.classes[0].transactions < 100_000_000);
}

#[test]
fn a_sweep_stops_at_its_first_incomplete_point() {
    let r = responder();
    let sweep = Sweep::new(vec![SweepDim::parse_flag("clients=1,2,3").unwrap()]).unwrap();
    let plans = resolve_sweep(
        &workload("RR(1B/1B)"),
        &settings(&r, 200),
        &sweep,
        false,
        true,
    )
    .unwrap();
    let effective: Vec<String> = plans
        .iter()
        .map(|(_, p)| p.workloads[0].to_string())
        .collect();
    assert_eq!(effective, ["RR1(1B/1B)", "RR2(1B/1B)", "RR3(1B/1B)"]);
    let stop = flag();
    let mut rec = Recorder {
        stop_at_start: Some((2, stop)),
        ..Recorder::default()
    };
    let mut seen = Vec::new();
    let records = run_sweep(
        &mut Runner::new(&mut rec, stop),
        &plans,
        &mut |point, record| {
            seen.push((point.describe(), record.complete));
        },
    )
    .unwrap();
    assert_eq!(records.len(), 2, "the third point is not run");
    assert!(records[0].complete && !records[1].complete);
    assert_eq!(
        seen,
        [
            ("clients=1".to_string(), true),
            ("clients=2".to_string(), false)
        ]
    );
    assert_eq!(
        rec.notes
            .iter()
            .filter(|n| n.starts_with("sweep point"))
            .count(),
        2
    );
}

#[test]
fn a_bad_sweep_value_is_refused_before_any_run() {
    let r = responder();
    let sweep = Sweep::new(vec![SweepDim::parse_flag("transport=tcp,unix").unwrap()]).unwrap();
    let mut s = settings(&r, 200);
    s.set("ipv6", "true").unwrap();
    let e = resolve_sweep(&workload("RR1(1B/1B)"), &s, &sweep, false, true).unwrap_err();
    assert!(input_message(e).contains("ipv6 and target exclude each other"));
}

#[test]
fn the_max_rate_search_doubles_while_the_bound_holds() {
    let r = responder();
    let (mut rec, stop) = (Recorder::default(), flag());
    let mut runner = Runner::new(&mut rec, stop);
    let mut s = settings(&r, 100);
    s.set("rate", "200/s").unwrap();
    let search = Search {
        workloads: &workload("RR1(1B/1B)"),
        settings: s,
        steps: 3,
        p99_under: "10s",
        announce: false,
    };
    let mut offered = Vec::new();
    let found = find_max_rate(&mut runner, search, &mut |rate, _| {
        offered.push(rate.to_string())
    })
    .unwrap();
    drop(runner);
    assert_eq!(offered, ["200/s", "400/s", "800/s"]);
    assert_eq!(found.pass.unwrap().to_string(), "800/s");
    assert!(!found.incomplete());
    let stored: Vec<String> = found
        .steps
        .iter()
        .map(|s| s.record.settings.rate.unwrap().to_string())
        .collect();
    assert_eq!(stored, offered, "each step stores the rate it was offered");
    // Each step's p99 rests on 100 transactions: said in every record.
    assert!(found.steps.iter().all(|s| s
        .record
        .warnings
        .iter()
        .any(|w| w.code == "p99_few_samples")));
    assert_eq!(
        rec.notes
            .iter()
            .filter(|n| n.starts_with("find-max-rate step"))
            .count(),
        3
    );
    assert!(found
        .table("10s")
        .contains("highest offered rate with p99 under 10s: 800/s"));
}

#[test]
fn the_max_rate_search_refuses_what_it_cannot_search() {
    let (mut rec, stop) = (Recorder::default(), flag());
    let mut runner = Runner::new(&mut rec, stop);
    let mut run = |workloads: &str, steps: u32, bound: &str| {
        let ws: Vec<Workload> = workloads.split(' ').map(|w| w.parse().unwrap()).collect();
        let search = Search {
            workloads: &ws,
            settings: RunSettings::default(),
            steps,
            p99_under: bound,
            announce: false,
        };
        input_message(
            find_max_rate(&mut runner, search, &mut |_, _| {})
                .err()
                .unwrap(),
        )
    };
    assert!(run("RR1(1B/1B)", 12, "0s").contains("no latency is under zero"));
    assert!(run("RR1(1B/1B)", 1, "1ms").contains("use 2 to 30 steps"));
    assert!(run("RR1(1B/1B) RR2(1B/1B)", 12, "1ms").contains("give exactly one"));
    assert!(run("RR1(1B/1B)@500/s", 12, "1ms").contains("remove the @"));
    assert!(run("RR1(1B/1B)", 12, "soon").starts_with("--p99-under soon"));
    drop(runner);
    assert!(
        rec.started.is_empty() && rec.notes.is_empty(),
        "nothing ran"
    );
}

#[test]
fn more_connections_than_descriptors_are_refused_before_the_responder() {
    // 1024K connections and the run's own descriptors exceed the most
    // any process may open (fs.nr_open is at most 1048576 by default); no
    // responder listens at the target: the refusal comes first. One agent
    // asked for: otherwise the run is split over as many as it needs.
    let mut s = RunSettings::default();
    s.set("target", "127.0.0.1:9").unwrap();
    s.set("agents", "1").unwrap();
    let plan = resolve(s, workload("RR1024K(1B/1B)"), false, true).unwrap();
    let (mut rec, stop) = (Recorder::default(), flag());
    let e = Runner::new(&mut rec, stop).execute(&plan).unwrap_err();
    assert!(input_message(e).contains("RLIMIT_NOFILE"));
    assert!(rec.notes.is_empty() && rec.started.is_empty());
}

#[test]
fn an_unreachable_target_is_an_error_not_a_record() {
    // A port nothing listens on: bound, then closed.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut s = RunSettings::default();
    s.set("target", &addr.to_string()).unwrap();
    s.set("transactions", "10").unwrap();
    let plan = resolve(s, workload("RR1(1B/1B)"), false, true).unwrap();
    let (mut rec, stop) = (Recorder::default(), flag());
    let e = Runner::new(&mut rec, stop).execute(&plan).unwrap_err();
    assert!(matches!(e, RunError::Input(_)), "{e:?}");
    assert!(rec.started.is_empty());
}

#[test]
fn a_study_step_runs_its_variant_settings_quietly() {
    let r = responder();
    let text = format!(
        "name = \"s\"\nrepetitions = 1\nworkloads = [\"RR1(1B/1B)\"]\ntarget = \"{}\"\ntransactions = 100\n\
         [[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\ntransactions = 200\n",
        r.addr()
    );
    let study = stackbench_model::study::parse_study(&text, "s.toml").unwrap();
    let steps = study.plan(&[], "s.toml").unwrap();
    let (mut rec, stop) = (Recorder::default(), flag());
    let mut runner = Runner::new(&mut rec, stop);
    let counts: Vec<(String, u64)> = steps
        .iter()
        .map(|step| {
            let record = runner.study_step(step).unwrap();
            assert!(record.complete);
            (step.variant.clone(), record.classes[0].transactions)
        })
        .collect();
    drop(runner);
    assert_eq!(counts, [("a".to_string(), 100), ("b".to_string(), 200)]);
    // A study prints its own step lines: the runner adds no placement line.
    assert!(rec.notes.is_empty(), "{:?}", rec.notes);
}

#[test]
fn a_study_stores_each_step_with_its_labels_and_stops_at_an_incomplete_one() {
    use stackbench_results::store::{Labels, Store};
    let r = responder();
    let text = format!(
        "name = \"s\"\nrepetitions = 2\nworkloads = [\"RR1(1B/1B)\"]\ntarget = \"{}\"\n\
         transactions = 100\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n",
        r.addr()
    );
    let study = stackbench_model::study::parse_study(&text, "s.toml").unwrap();
    let steps = study.plan(&[], "s.toml").unwrap();
    assert_eq!(steps.len(), 4);
    let dir = std::env::temp_dir().join(format!("runner-study-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut store = Store::open(Some(&dir.join("results.db"))).unwrap();
    let stop = flag();
    // The third step (repetition 2 of variant a) is interrupted.
    let mut rec = Recorder {
        stop_at_start: Some((3, stop)),
        ..Recorder::default()
    };
    let mut runner = Runner::new(&mut rec, stop);
    let extra: Labels = [("host".to_string(), "lab1".to_string())]
        .into_iter()
        .collect();
    let (mut announced, mut ids) = (Vec::new(), Vec::new());
    let run = stackbench_runner::study::run_steps(
        &mut runner,
        &steps,
        Some(&mut store),
        &extra,
        &mut |step| announced.push(step.index),
        &mut |id| ids.push(id),
    );
    drop(runner);
    assert_eq!(announced, [0, 1, 2], "the fourth step is not run");
    assert_eq!((run.stored, ids.len(), run.ran.len()), (3, 3, 3));
    assert!(run.outcome.is_err(), "an incomplete step ends the study");
    assert!(
        !run.ran[2].record.complete,
        "the incomplete record is kept and stored"
    );
    let stored = store.select(&extra).unwrap();
    assert_eq!(stored.len(), 3);
    let variants: Vec<&str> = stored
        .iter()
        .map(|s| s.labels["variant"].as_str())
        .collect();
    assert_eq!(variants, ["a", "b", "a"]);
    assert!(stored.iter().all(|s| s.labels["study"] == "s"));
    let _ = std::fs::remove_dir_all(&dir);
}
