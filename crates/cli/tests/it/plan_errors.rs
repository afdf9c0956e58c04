//! `stackbench plan` input errors through the binary: each is one line on
//! stderr naming the flag (or file and key) and the fix, with exit status 2.

use assert_cmd::prelude::*;

use crate::common::{fails_with, plan, RATINGS, WITHOUT_CPU, WITH_CPU, ZIIP_IPSEC};

#[test]
fn errors_are_one_line_with_exit_2() {
    fails_with(
        &[
            "cpu",
            "--users",
            "8000",
            "--per-user",
            "2/min",
            "--cpu-per-tran",
            "0.176",
            "--processors",
            "4",
        ],
        "--cpu-per-tran '0.176': the duration has no unit",
    );
    fails_with(
        &[
            "cpu",
            "--users",
            "8000",
            "--per-user",
            "2/sec",
            "--cpu-per-tran",
            "1ms",
            "--processors",
            "4",
        ],
        "--per-user '2/sec': unknown interval 'sec'",
    );
    fails_with(
        &["cpu", "--rate", "1/s", "--cpu-per-tran", "1ms"],
        "--processors is required",
    );
    fails_with(
        &[
            "cpu",
            "--rate",
            "1/s",
            "--users",
            "2",
            "--per-user",
            "1/s",
            "--cpu-per-tran",
            "1ms",
            "--processors",
            "1",
        ],
        "use one of them",
    );
    fails_with(
        &[
            "cpu",
            "--users",
            "8k",
            "--per-user",
            "1/s",
            "--cpu-per-tran",
            "1ms",
            "--processors",
            "1",
        ],
        "--users '8k'",
    );
    fails_with(&["cpu", "-f", ZIIP_IPSEC], "has no [cpu] section");
    fails_with(
        &["cpu", "-f", "no-such-plan.toml"],
        "--file no-such-plan.toml: cannot read it",
    );
    fails_with(&["cpu", "--from", WITHOUT_CPU, "--processors", "4"], "has no CPU figures for the server side: it was recorded (by stackbench 0.1.0) before CPU accounting");
    fails_with(
        &["cpu", "--from", WITH_CPU, "--processors", "4"],
        "--class is required",
    );
    fails_with(
        &[
            "cpu",
            "--from",
            WITH_CPU,
            "--class",
            "9",
            "--processors",
            "4",
        ],
        "--class '9': no such class",
    );
    fails_with(
        &[
            "cpu",
            "--from",
            WITH_CPU,
            "--class",
            "0",
            "--side",
            "middle",
            "--processors",
            "4",
        ],
        "--side 'middle': unknown side",
    );
    fails_with(
        &["storage", "--from", WITH_CPU, "--class", "1"],
        "has no memory figures",
    );
    fails_with(
        &[
            "cpu", "--from", WITH_CPU, "--class", "1", "--side", "client",
        ],
        "CPU was not measured for the client side",
    );
    fails_with(
        &[
            "offload",
            "--appl-cp",
            "100",
            "--iipcp",
            "120",
            "--general-engines",
            "2",
        ],
        "--iipcp '120': exceeds --appl-cp 100",
    );
    fails_with(
        &["offload", "--iipcp", "1", "--general-engines", "2"],
        "--appl-cp is required",
    );
    fails_with(
        &[
            "normalize",
            "--networking-change",
            "5%",
            "--profile",
            "batch",
        ],
        "--profile 'batch': unknown profile",
    );
    fails_with(
        &[
            "mva",
            "--demand",
            "cpu=1ms",
            "--demand",
            "net=1ms",
            "--processors",
            "2",
            "--users",
            "10",
        ],
        "takes exactly one --demand",
    );
    fails_with(
        &["mva", "--demand", "=1ms", "--users", "1"],
        "--demand '=1ms': the station has no name",
    );
    fails_with(
        &["usl", "--point", "1:2", "--point", "2:3"],
        "at least 4 points",
    );
    fails_with(&["usl", "--point", "1-2"], "--point '1-2': not a point");
    fails_with(&["usl"], "--point is required");
    fails_with(
        &[
            "rescale",
            "--cpu-per-tran",
            "1ms",
            "--ratings",
            RATINGS,
            "--source",
            "x",
            "--target",
            "example-8way",
        ],
        "--source 'x': no such machine",
    );
    fails_with(
        &["rescale", "--cpu-per-tran", "1ms"],
        "--source-rating is required",
    );
}

#[test]
fn plan_file_errors_name_the_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let bad_key = dir.path().join("bad-key.toml");
    std::fs::write(&bad_key, "[cpu]\nuser = 8000\n").unwrap();
    fails_with(
        &["cpu", "-f", bad_key.to_str().unwrap()],
        "unknown key 'user' in [cpu]; the keys are the flags of `plan cpu`: users, per-user",
    );
    let bad_section = dir.path().join("bad-section.toml");
    std::fs::write(&bad_section, "[cpus]\nusers = 8000\n").unwrap();
    fails_with(
        &["cpu", "-f", bad_section.to_str().unwrap()],
        "unknown section [cpus]",
    );
    let bad_toml = dir.path().join("bad.toml");
    std::fs::write(&bad_toml, "[cpu\n").unwrap();
    fails_with(&["cpu", "-f", bad_toml.to_str().unwrap()], "not valid TOML");
    let bad_value = dir.path().join("bad-value.toml");
    std::fs::write(
        &bad_value,
        "[cpu]\nusers = 8000\nper-user = \"2/min\"\ncpu-per-tran = 0.2\nprocessors = 4\n",
    )
    .unwrap();
    fails_with(
        &["cpu", "-f", bad_value.to_str().unwrap()],
        "--cpu-per-tran '0.2': the duration has no unit",
    );
}

#[test]
fn clap_errors_exit_2() {
    plan(&["cpu", "--digits", "0"]).assert().code(2);
    plan(&["nosuch"]).assert().code(2);
}

#[test]
fn stored_run_without_cpu_needs_the_flag() {
    fails_with(
        &["rescale", "--from", WITHOUT_CPU, "--ratings", RATINGS, "--source", "tn3270-capacity-z9-4way", "--target", "example-8way"],
        "before CPU accounting; rerun the measurement with a stackbench that records CPU, or give --cpu-per-tran",
    );
    fails_with(
        &["mva", "--from", WITHOUT_CPU, "--think", "30s"],
        "has no CPU figures for the server side",
    );
}

/// No input may make a plan command compute for hours with no output: the
/// solvers are O(N), so populations and processors have ranges.
#[test]
fn populations_and_processors_are_bounded() {
    fails_with(
        &[
            "mva",
            "--demand",
            "cpu=0.176ms",
            "--think",
            "30s",
            "--users",
            "1000M",
        ],
        "--users '1048576000': more than 16M users in one population",
    );
    fails_with(
        &[
            "mva",
            "--demand",
            "cpu=0.176ms",
            "--users",
            "16M,16M,16M,16M,16M",
        ],
        "the populations add up to more than 64M users",
    );
    fails_with(
        &[
            "mva",
            "--demand",
            "cpu=1ms",
            "--processors",
            "100000",
            "--users",
            "1K",
        ],
        "--processors '100000': out of range; give 1 to 4096",
    );
}
