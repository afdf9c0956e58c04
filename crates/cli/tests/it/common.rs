//! Helpers shared by the CLI integration tests: the binary with a throw-away
//! results database, JSON read from its stdout, the example and fixture
//! files, `plan`'s one-line error check, and bounded waits on child
//! processes (polling a condition against a deadline, never a fixed sleep).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use assert_cmd::prelude::*;
use serde_json::Value;

/// Plan files and stored-run fixtures, relative to the crate (the tests' working directory).
pub const TN3270_CAPACITY: &str = "../../examples/plan-tn3270-capacity.toml";
pub const ZIIP_IPSEC: &str = "../../examples/plan-ziip-ipsec.toml";
pub const USL_PLAN: &str = "../../examples/plan-usl.toml";
pub const USL_CSV: &str = "../../examples/usl-example.csv";
pub const RATINGS: &str = "../../examples/ratings.toml";
pub const WITH_CPU: &str = "../plan/tests/fixtures/result-with-cpu.json";
pub const WITHOUT_CPU: &str = "../plan/tests/fixtures/result-without-cpu.json";

/// The binary, storing into a throw-away database rather than the user's
/// (`--db` on the command line still wins).
pub fn stackbench() -> Command {
    let mut cmd = Command::cargo_bin("stackbench").unwrap();
    let db = std::env::temp_dir().join(format!("stackbench-cli-tests-{}.db", std::process::id()));
    cmd.env("STACKBENCH_DB", db);
    cmd
}

/// The `examples/` directory of the repository.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// The JSON document on `output`'s stdout.
pub fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// Runs `cmd`, which must succeed, and returns its JSON document.
/// `stackbench run WORKLOAD --transactions N --json --no-store FLAGS...`,
/// asserted to succeed: its JSON record.
pub fn run_json(workload: &str, transactions: u64, flags: &[&str]) -> Value {
    let record = json_ok(
        stackbench()
            .args(["run", workload, "--transactions", &transactions.to_string()])
            .args(["--json", "--no-store"])
            .args(flags),
    );
    assert_valid_record(&record);
    record
}

/// The published record schema, docs/record.schema.json, compiled once.
fn record_validator() -> &'static jsonschema::Validator {
    static VALIDATOR: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/record.schema.json");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
        jsonschema::draft202012::new(&schema).expect("the schema compiles")
    })
}

/// The errors of `record` against the published record schema, one line each.
pub fn record_schema_errors(record: &Value) -> Vec<String> {
    record_validator()
        .iter_errors(record)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Fails unless `record` validates against the published record schema.
pub fn assert_valid_record(record: &Value) {
    let errors = record_schema_errors(record);
    assert!(
        errors.is_empty(),
        "the record does not match docs/record.schema.json:\n{}",
        errors.join("\n")
    );
}

pub fn json_ok(cmd: &mut Command) -> Value {
    json_of(&output_ok(cmd))
}

/// Runs `cmd`, which must succeed (else its stderr is the failure), and
/// returns its output.
pub fn output_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `stackbench plan ARGS…`.
pub fn plan(args: &[&str]) -> Command {
    let mut cmd = stackbench();
    cmd.arg("plan").args(args);
    cmd
}

/// Asserts that `plan ARGS…` exits 2 with a one-line error containing `needle`.
pub fn fails_with(args: &[&str], needle: &str) {
    let out = plan(args).assert().code(2).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains(needle), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(out.stdout.is_empty());
}

/// Asserts that `stackbench SUBCOMMAND ARGS…` exits 2 with one line on
/// stderr containing `needle`.
pub fn refused(subcommand: &str, args: &[&str], needle: &str) {
    let out = stackbench().arg(subcommand).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{subcommand} {args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.contains(needle), "{args:?}: want '{needle}': {err}");
}

/// Waits for `child` to exit and collects its piped stdout and stderr; if it
/// has not exited within `max` it is killed and the test fails (a hang check).
pub fn wait_bounded(mut child: Child, max: Duration) -> Output {
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).map(|_| bytes)
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + max;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hang check: the run did not end within {max:?} of being cut short");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap().unwrap(),
        stderr: stderr.join().unwrap().unwrap(),
    }
}

/// Waits, at most `max`, until the driver's first worker thread (`drive-w0`)
/// has run for a few scheduler ticks: with no warm-up its window is open and
/// transactions are being counted. Polls /proc; no fixed sleep.
pub fn wait_until_measuring(driver: &Child, max: Duration) {
    let deadline = Instant::now() + max;
    while worker_cpu_ticks(driver.id()) < 3 {
        assert!(
            Instant::now() < deadline,
            "the driver's worker did not run within {max:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// utime + stime, in clock ticks, of `pid`'s thread `drive-w0` (0 before it exists).
fn worker_cpu_ticks(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    for task in tasks.flatten() {
        let dir = task.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim() != "drive-w0" {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        // Fields after the ")" closing the name: utime and stime are the
        // 12th and 13th (fields 14 and 15 of proc(5)).
        let fields: Vec<u64> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .unwrap_or_default()
            .split_whitespace()
            .skip(11)
            .take(2)
            .filter_map(|f| f.parse().ok())
            .collect();
        return fields.iter().sum();
    }
    0
}

/// Runs example study `file` briefly (3 transactions per class, one
/// repetition, nothing stored) and returns, for each variant name given,
/// how many of its rows completed.
pub fn example_study_completes(file: &str, variants: &[&str]) -> Vec<usize> {
    let out = output_ok(stackbench().arg("study").arg(examples().join(file)).args([
        "--transactions",
        "3",
        "--repetitions",
        "1",
        "--no-store",
    ]));
    let table = String::from_utf8_lossy(&out.stdout);
    variants
        .iter()
        .map(|v| {
            let cell = format!(" {v} ");
            table
                .lines()
                .filter(|l| l.contains(&cell) && l.contains(" yes"))
                .count()
        })
        .collect()
}
