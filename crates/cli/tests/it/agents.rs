//! Runs split over agents: exact counts over local agents, the start skew
//! stored, agents started by someone else (launcher external) joining over
//! TCP, an agent of another protocol refused and one of another build named
//! in the record, a dead agent making the run
//! incomplete by name, a dead controller taking its agents with it, and the
//! bad inputs refused in one line.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// A free loopback port for the controller's agent listener.
fn free_port() -> u16 {
    stackbench_testkit::server::free_port()
}

/// The run token the tests' external controllers and agents share, as a
/// Kubernetes Secret would give it to both (STACKBENCH_TOKEN, hex).
const TOKEN: &str = "5b0c6e2f9d1a47c3b8e05f6a2d4c7e91";

/// `stackbench agent --controller ADDR --segment I/N`, started as a child
/// with the run token.
fn agent(addr: &str, segment: &str) -> Child {
    agent_with_token(addr, segment, Some(TOKEN))
}

/// [`agent`] with `token` in STACKBENCH_TOKEN (`None`: no token at all).
fn agent_with_token(addr: &str, segment: &str, token: Option<&str>) -> Child {
    let mut cmd = stackbench();
    match token {
        Some(t) => cmd.env("STACKBENCH_TOKEN", t),
        None => cmd.env_remove("STACKBENCH_TOKEN"),
    };
    cmd.args(["agent", "--controller", addr, "--segment", segment])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `stackbench run RR2(64B/64B) ARGS… --agents 2 --launcher external
/// --agent-listen ADDR`: a controller that waits for two agents started by
/// the test; stdout and stderr both as `out` says.
fn external_controller(addr: &str, args: &[&str], out: fn() -> Stdio) -> Child {
    stackbench()
        .env("STACKBENCH_TOKEN", TOKEN)
        .args(["run", "RR2(64B/64B)"])
        .args(args)
        .args([
            "--agents",
            "2",
            "--launcher",
            "external",
            "--agent-listen",
            addr,
        ])
        .stdout(out())
        .stderr(out())
        .spawn()
        .unwrap()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.split_whitespace().nth(2).is_none_or(|st| st != "Z"))
}

#[test]
fn four_local_agents_run_exact_counts_and_store_their_rows() {
    let v = run_json("RR8(64B/64B)", 10_000, &["--agents", "4"]);
    assert_eq!(v["complete"], true, "{v}");
    let class = &v["classes"][0];
    assert_eq!(class["notation"], "RR8(64B/64B)");
    assert_eq!(class["clients"], 8);
    assert_eq!(class["transactions"], 10_000);
    assert_eq!(v["settings"]["agents"], 4);
    let agents = &v["agents"];
    assert_eq!(agents["count"], 4);
    assert_eq!(agents["launcher"], "local");
    assert_eq!(agents["responders"], 4, "one responder per local agent");
    let rows = agents["agents"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    let per_agent: Vec<u64> = rows
        .iter()
        .map(|r| r["classes"][0]["transactions"].as_u64().unwrap())
        .collect();
    assert_eq!(per_agent, vec![2_500; 4]);
    // One machine: the windows open together (the closing note reports the
    // figure; a loaded test machine gets a looser bound).
    let skew = agents["start_skew_s"].as_f64().unwrap();
    assert!((0.0..0.05).contains(&skew), "start skew {skew} s");
    // The merged latency is a histogram of every agent's transactions.
    let p50 = class["latency_us"]["p50"].as_f64().unwrap();
    assert!(p50 > 0.0);
}

#[test]
fn external_agents_join_and_a_killed_agent_makes_the_run_incomplete_by_name() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let controller = external_controller(
        &addr,
        &["--duration", "3s", "--warmup", "0s", "--json", "--no-store"],
        Stdio::piped,
    );
    let keep = agent(&addr, "0/2");
    let mut doomed = agent(&addr, "1/2");
    // Kill agent 1 once the run is measuring (its driver thread runs).
    wait_until_measuring(&doomed, Duration::from_secs(30));
    doomed.kill().unwrap();
    doomed.wait().unwrap();
    let out = wait_bounded(controller, Duration::from_secs(60));
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_of(&out);
    assert_eq!(v["complete"], false);
    let reason = v["incomplete_reason"].as_str().unwrap();
    assert!(reason.contains("agent 1/2"), "{reason}");
    // The agent that died is named first, before the one the controller
    // then stopped.
    assert!(reason.starts_with("agent 1 (segment 1/2"), "{reason}");
    // The surviving agent's rows are kept.
    let rows = v["agents"]["agents"].as_array().unwrap();
    let kept = rows.iter().find(|r| r["index"] == 0).unwrap();
    assert!(
        kept["classes"][0]["transactions"].as_u64().unwrap() > 0,
        "{kept}"
    );
    let survivor = wait_bounded(keep, Duration::from_secs(10));
    assert!(survivor.status.success());
    // The wait for agents started elsewhere was said, with its deadline.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "stackbench: waiting up to 300 s for 2 agents at {addr}\n"
        )),
        "{err}"
    );
}

#[test]
fn agents_leave_when_their_controller_dies() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut controller = external_controller(
        &addr,
        &["--duration", "60s", "--warmup", "0s", "--no-store"],
        Stdio::null,
    );
    let agents = [agent(&addr, "0/2"), agent(&addr, "1/2")];
    wait_until_measuring(&agents[0], Duration::from_secs(30));
    controller.kill().unwrap();
    controller.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    for a in agents {
        let pid = a.id();
        let out = wait_bounded(a, deadline.saturating_duration_since(Instant::now()));
        assert!(!alive(pid));
        drop(out);
    }
}

/// Connects to the controller's agent port at `addr`, retrying until it
/// listens.
fn dial(addr: &str) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match TcpStream::connect(addr) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("the controller never listened: {e}"),
        }
    }
}

/// Sends `lines` on a new connection to `addr` and returns the first line
/// the controller answers after them.
fn say(addr: &str, lines: &[&str]) -> String {
    let stream = dial(addr);
    let mut w = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    let mut answer = String::new();
    for (i, line) in lines.iter().enumerate() {
        writeln!(w, "{line}").unwrap();
        answer.clear();
        r.read_line(&mut answer).unwrap();
        if i + 1 < lines.len() {
            assert!(answer.contains("challenge"), "{answer}");
        }
    }
    answer
}

/// An agent of an earlier protocol, an agent without the token, one with
/// another token and a stranger are refused, each in one line on both
/// sides, and counted in the record; the run goes on with the agents that
/// hold the token, and nothing from the refused ones is recorded.
#[test]
fn agents_of_another_protocol_or_without_the_token_are_refused_and_counted() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let controller = external_controller(
        &addr,
        &["--transactions", "200", "--json", "--no-store"],
        Stdio::piped,
    );
    // Protocol 1's hello: refused in protocol 1's words, naming both.
    let answer = say(
        &addr,
        &[
            r#"{"msg":"hello","protocol":1,"version":"0.0.1","index":0,"count":2,"host":"old","pid":1}"#,
        ],
    );
    assert!(answer.contains("refused"), "{answer}");
    assert!(answer.contains("protocol 1 (stackbench 0.0.1"), "{answer}");
    // No token: the handshake's proof is empty.
    let start = r#"{"auth":"start","channel":"agents","nonce":"00"}"#;
    let answer = say(&addr, &[start, r#"{"auth":"proof","proof":null}"#]);
    assert!(answer.contains("has no token"), "{answer}");
    // Agents that cannot prove the token exit 2 with one line.
    for token in [Some("00112233445566778899aabbccddeeff"), None] {
        let out = wait_bounded(
            agent_with_token(&addr, "0/2", token),
            Duration::from_secs(30),
        );
        assert_eq!(out.status.code(), Some(2), "{token:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        let needle = if token.is_some() {
            "another token"
        } else {
            "no run token"
        };
        assert!(err.contains(needle), "{err}");
    }
    let agents = [agent(&addr, "0/2"), agent(&addr, "1/2")];
    let out = wait_bounded(controller, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let refusals: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("stackbench: refused the agent connection of 127.0.0.1:"))
        .collect();
    assert_eq!(refusals.len(), 3, "{err}");
    // Both protocols and both builds, in one line.
    let ours = format!(
        "this controller speaks protocol {} (stackbench ",
        stackbench_runner::agents::wire::PROTOCOL
    );
    assert!(
        refusals[0].contains(
            "agent 0/2 on old speaks agent wire protocol 1 (stackbench 0.0.1, commit unknown)"
        ) && refusals[0].contains(&ours),
        "{err}"
    );
    assert!(refusals[1].contains("has no token"), "{err}");
    assert!(refusals[2].contains("another token"), "{err}");
    let v = json_of(&out);
    assert_eq!(v["refused_peers"]["agent_connections"], 3, "{v}");
    assert_eq!(v["refused_peers"]["control_connections"], 0, "{v}");
    assert_eq!(v["classes"][0]["transactions"], 200);
    assert_eq!(v["agents"]["agents"].as_array().unwrap().len(), 2);
    for a in agents {
        assert!(wait_bounded(a, Duration::from_secs(10)).status.success());
    }
}

/// Local agents and their responders get the run token in their
/// environment, never on their command line (which `ps` shows every user).
#[test]
fn spawned_agents_and_responders_carry_the_token_in_their_environment_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    let secret = "cmdline-check-0123456789abcdef";
    std::fs::write(&file, format!("{secret}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    let mut controller = stackbench()
        .args(["run", "RR2(64B/64B)", "--agents", "2", "--duration", "3s"])
        .args(["--warmup", "0s", "--no-store", "--token-file"])
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The controller's children: two responders (serve) and two agents.
    let deadline = Instant::now() + Duration::from_secs(30);
    let children = loop {
        let kids = children_of(controller.id());
        let started = kids.iter().filter(|(_, c)| c.contains("\0agent\0")).count() == 2
            && kids.iter().filter(|(_, c)| c.contains("\0serve\0")).count() == 2;
        if started || Instant::now() >= deadline {
            break kids;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(children.len(), 4, "{children:?}");
    for (pid, cmdline) in &children {
        assert!(
            !cmdline.contains(secret) && !cmdline.contains(&hex),
            "{cmdline}"
        );
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        let environ = String::from_utf8_lossy(&environ);
        assert!(
            environ.contains(&format!("STACKBENCH_TOKEN={hex}")),
            "pid {pid}"
        );
    }
    let _ = controller.kill();
    let _ = controller.wait();
}

/// The children of `pid` and their command lines (arguments joined by NUL,
/// with a NUL at each end), from /proc.
fn children_of(pid: u32) -> Vec<(u32, String)> {
    let mut kids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // The fields after the command's closing parenthesis: state, ppid.
        let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
        if after.split_whitespace().nth(1) != Some(&pid.to_string()) {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(format!("/proc/{child}/cmdline")) {
            kids.push((child, format!("\0{}", String::from_utf8_lossy(&cmdline))));
        }
    }
    kids
}

/// Relays one agent's control connection to the controller at `addr`,
/// its hello's commit rewritten to `commit`: an agent of another build of
/// the same wire protocol. Returns the address the agent is to dial.
fn relay_with_commit(addr: &str, commit: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let relay = listener.local_addr().unwrap().to_string();
    let addr = addr.to_string();
    std::thread::spawn(move || {
        let (agent, _) = listener.accept().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let controller = loop {
            match TcpStream::connect(&addr) {
                Ok(s) => break s,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => panic!("the controller never listened: {e}"),
            }
        };
        let (mut to_agent, from_controller) =
            (agent.try_clone().unwrap(), controller.try_clone().unwrap());
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut BufReader::new(from_controller), &mut to_agent);
        });
        let mut from_agent = BufReader::new(agent);
        let mut to_controller = controller;
        // The token handshake's lines pass as they are; the hello after
        // them gets the other commit.
        loop {
            let mut line = String::new();
            from_agent.read_line(&mut line).unwrap();
            let mut v: serde_json::Value = serde_json::from_str(&line).unwrap();
            if v.get("auth").is_some() {
                to_controller.write_all(line.as_bytes()).unwrap();
                continue;
            }
            v["commit"] = commit.into();
            writeln!(to_controller, "{v}").unwrap();
            break;
        }
        let _ = std::io::copy(&mut from_agent, &mut to_controller);
    });
    relay
}

/// An agent of the same wire protocol but another build runs, and the run's
/// record names it in the `agent_builds_differ` warning.
#[test]
fn an_agent_of_another_build_runs_and_is_named_in_the_record() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let controller = external_controller(
        &addr,
        &["--transactions", "200", "--json", "--no-store"],
        Stdio::piped,
    );
    let relay = relay_with_commit(&addr, "f".repeat(40));
    let agents = [agent(&addr, "0/2"), agent(&relay, "1/2")];
    let out = wait_bounded(controller, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let v = json_of(&out);
    assert_eq!(v["classes"][0]["transactions"], 200, "{v}");
    let warnings = v["warnings"].as_array().unwrap();
    let w = warnings
        .iter()
        .find(|w| w["code"] == "agent_builds_differ")
        .unwrap_or_else(|| panic!("no agent_builds_differ warning: {warnings:?}"));
    let message = w["message"].as_str().unwrap();
    assert!(
        message.contains("agent 1/2 on ") && message.contains("commit ffffffffffff"),
        "{message}"
    );
    assert!(!message.contains("agent 0/2"), "{message}");
    for a in agents {
        assert!(wait_bounded(a, Duration::from_secs(10)).status.success());
    }
}

#[test]
fn bad_agent_inputs_are_one_line_and_start_nothing() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["run", "RR2(1B/1B)", "--agents", "3", "--transactions", "10"],
            "at most 2 agents",
        ),
        (&["run", "RR2(1B/1B)", "--agents", "0"], "agents"),
        (
            &[
                "run",
                "RR2(1B/1B)",
                "--launcher",
                "slurm",
                "--transactions",
                "10",
            ],
            "--agents 4",
        ),
        (
            &["agent", "--controller", "127.0.0.1:1", "--segment", "4/4"],
            "0 to 3",
        ),
    ];
    for (args, needle) in cases {
        let out = stackbench()
            .args(args)
            .env_remove("SLURM_PROCID")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

/// The launchers' preconditions are checked before a responder starts or
/// the idle baseline is taken (one line, exit 2, no placement line before
/// it): Slurm's tools reachable, and the agents' address bindable.
#[test]
fn launcher_preconditions_are_checked_before_anything_starts() {
    let empty = tempfile::tempdir().unwrap();
    let out = stackbench()
        .args(["run", "RR2(1B/1B)", "--agents", "2", "--launcher", "slurm"])
        .args(["--transactions", "10", "--no-store"])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("srun not found on PATH: install slurm-wlm"),
        "{err}"
    );
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = stackbench()
        .args([
            "run",
            "RR2(1B/1B)",
            "--agents",
            "2",
            "--launcher",
            "external",
        ])
        .args([
            "--agent-listen",
            &addr,
            "--transactions",
            "10",
            "--no-store",
        ])
        // Launcher external wants the agents' token: given, so that the
        // address is what is refused.
        .env("STACKBENCH_TOKEN", TOKEN)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("agent_listen {addr}: Address already in use")),
        "{err}"
    );
}

/// A study step over 4 agents that srun starts as the tasks of one job step
/// (each taking SLURM_PROCID/SLURM_NTASKS as its segment): exact counts, the
/// launcher stored and every segment reported (that the job step leaves
/// nothing behind is the slurm tier's own test, crates/runner/tests/slurm.rs).
#[test]
fn a_study_step_runs_over_four_agents_started_by_srun() {
    if let Err(why) = stackbench_runner::agents::slurm::check() {
        stackbench_testkit::skip(
            stackbench_testkit::Tier::Slurm,
            "a_study_step_runs_over_four_agents_started_by_srun",
            &why,
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("slurm-step.toml");
    std::fs::write(
        &file,
        "name = \"slurm-step\"\nworkloads = [\"RR8(64B/64B)\"]\ntransactions = 8000\n\
         agents = 4\nlauncher = \"slurm\"\n",
    )
    .unwrap();
    let db = dir.path().join("results.db");
    let out = stackbench()
        .args(["study"])
        .arg(&file)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let export = json_ok(
        stackbench()
            .args(["results", "export", "--format", "json", "--db"])
            .arg(&db),
    );
    let run = &export[0];
    let record = if run["record"].is_object() {
        &run["record"]
    } else {
        run
    };
    assert_eq!(record["agents"]["launcher"], "slurm", "{record}");
    assert_eq!(record["agents"]["count"], 4);
    assert_eq!(record["classes"][0]["transactions"], 8000);
    let rows = record["agents"]["agents"].as_array().unwrap();
    let mut indexes: Vec<u64> = rows.iter().map(|r| r["index"].as_u64().unwrap()).collect();
    indexes.sort_unstable();
    assert_eq!(indexes, vec![0, 1, 2, 3]);
}
