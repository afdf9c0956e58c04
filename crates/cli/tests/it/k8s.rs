//! `stackbench k8s render`: the objects it writes (names, counts, the agent
//! and controller command lines, the failure policy), its one-line refusals
//! of bad input with nothing written, the rendered readiness probe run
//! against a real responder, and — in the k8s-schema tier — every object
//! validated offline against the Kubernetes OpenAPI schema by the pinned
//! `kubernetes-validate`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::Value;
use stackbench_testkit::{skip, Tier};

use crate::common::{examples, stackbench};

/// The Kubernetes version the manifests are validated against: the first
/// release where every field they use is GA (`backoffLimitPerIndex`).
const KUBERNETES: &str = "1.33.0";

fn study(name: &str) -> PathBuf {
    examples().join(name)
}

/// `k8s render FILE ARGS… -o DIR` in a fresh temporary directory, which must
/// succeed: the directory and the objects by file name.
fn render(file: &Path, args: &[&str]) -> (tempfile::TempDir, Vec<(String, Value)>) {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = stackbench()
        .args(["k8s", "render"])
        .arg(file)
        .args(args)
        .arg("-o")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut objects: Vec<(String, Value)> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, serde_json::from_str(&text).unwrap())
        })
        .collect();
    objects.sort_by(|a, b| a.0.cmp(&b.0));
    // stdout lists the files written, one per line.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        objects.len()
    );
    (dir, objects)
}

fn object<'a>(objects: &'a [(String, Value)], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .map(|(_, v)| v)
        .find(|v| v["kind"] == kind && v["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} among {objects:?}"))
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

#[test]
fn render_writes_the_study_agents_responders_and_controller() {
    let file = study("tn3270-capacity.toml");
    let (_dir, objects) = render(
        &file,
        &[
            "--agents",
            "8",
            "--responders",
            "2",
            "--image",
            "reg.example/sb:1",
            "--namespace",
            "perf",
        ],
    );
    let files: Vec<&str> = objects.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        files,
        [
            "00-configmap-tn3270-capacity-study.json",
            "01-secret-tn3270-capacity-token.json",
            "10-service-tn3270-capacity-responder.json",
            "11-deployment-tn3270-capacity-responder.json",
            "20-service-tn3270-capacity-controller.json",
            "21-job-tn3270-capacity-controller.json",
            "30-job-tn3270-capacity-agents.json",
        ]
    );
    for (_, v) in &objects {
        assert_eq!(v["metadata"]["namespace"], "perf");
        assert_eq!(
            v["metadata"]["labels"]["app.kubernetes.io/instance"],
            "tn3270-capacity"
        );
    }

    // The run token: a Secret every container reads into STACKBENCH_TOKEN,
    // in no command line; its file readable by its owner only.
    let secret = object(&objects, "Secret", "tn3270-capacity-token");
    let token = secret["stringData"]["token"].as_str().unwrap();
    assert!(token.len() >= 32, "{token}");
    for (file, v) in &objects {
        assert!(!v.to_string().contains(token) || v == secret, "{file}");
        if let Some(containers) = v["spec"]["template"]["spec"]["containers"].as_array() {
            let env = containers[0]["env"].as_array().unwrap();
            assert!(
                env.iter().any(|e| e["name"] == "STACKBENCH_TOKEN"
                    && e["valueFrom"]["secretKeyRef"]["name"] == "tn3270-capacity-token"),
                "{file}: {env:?}"
            );
        }
    }
    let mode = std::fs::metadata(_dir.path().join("out/01-secret-tn3270-capacity-token.json"))
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777);
    assert_eq!(mode.unwrap(), 0o600);

    let map = object(&objects, "ConfigMap", "tn3270-capacity-study");
    assert_eq!(
        map["data"]["study.toml"].as_str().unwrap(),
        std::fs::read_to_string(&file).unwrap()
    );

    let agents = object(&objects, "Job", "tn3270-capacity-agents");
    let spec = &agents["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 8);
    assert_eq!(spec["parallelism"], 8);
    // A failed agent is never started again, and does not end the others.
    assert_eq!(spec["backoffLimitPerIndex"], 0);
    assert!(spec.get("backoffLimit").is_none());
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let agent = &pod["containers"][0];
    assert_eq!(agent["image"], "reg.example/sb:1");
    assert_eq!(
        strings(&agent["command"]),
        [
            "stackbench",
            "agent",
            "--controller",
            "tn3270-capacity-controller:7700"
        ]
    );
    assert_eq!(agent["env"][0]["name"], "STACKBENCH_AGENTS");
    assert_eq!(agent["env"][0]["value"], "8");
    let wait = pod["initContainers"][0]["command"][2].as_str().unwrap();
    assert!(
        wait.contains("getent hosts tn3270-capacity-controller"),
        "{wait}"
    );

    let responders = object(&objects, "Deployment", "tn3270-capacity-responder");
    assert_eq!(responders["spec"]["replicas"], 2);
    let serve = &responders["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        strings(&serve["command"]),
        ["stackbench", "serve", "--listen", "0.0.0.0:7701"]
    );
    let selector = &responders["spec"]["selector"]["matchLabels"];
    assert_eq!(
        &responders["spec"]["template"]["metadata"]["labels"],
        selector
    );
    let service = object(&objects, "Service", "tn3270-capacity-responder");
    assert_eq!(service["spec"]["clusterIP"], "None");
    assert_eq!(&service["spec"]["selector"], selector);

    let controller = object(&objects, "Job", "tn3270-capacity-controller");
    assert_eq!(controller["spec"]["backoffLimit"], 0);
    let pod = &controller["spec"]["template"]["spec"];
    let command = strings(&pod["containers"][0]["command"]);
    let study_at = command.iter().position(|a| *a == "study").unwrap();
    assert_eq!(
        command[study_at - 1..],
        [
            "stackbench",
            "study",
            "/etc/stackbench/study.toml",
            "--agents",
            "8",
            "--launcher",
            "external",
            "--agent-listen",
            "0.0.0.0:7700",
            "--target",
            "tn3270-capacity-responder:7701",
            "--db",
            "/results/results.db",
        ]
    );
    let script = command[2];
    assert!(
        script.contains(
            "stackbench results export --db /results/results.db --where \"study=$STUDY_NAME\""
        ),
        "{script}"
    );
    let env = &pod["containers"][0]["env"][0];
    assert_eq!(env["name"], "STUDY_NAME");
    assert_eq!(env["value"], "tn3270-capacity");
    let wait = pod["initContainers"][0]["command"][2].as_str().unwrap();
    assert!(
        wait.contains("getent ahosts tn3270-capacity-responder"),
        "{wait}"
    );
    assert!(wait.contains("-ge 2 ]"), "{wait}");
    assert_eq!(
        pod["volumes"][0]["configMap"]["name"],
        "tn3270-capacity-study"
    );
    assert!(pod["volumes"][1]["emptyDir"].is_object());
    let service = object(&objects, "Service", "tn3270-capacity-controller");
    assert_eq!(service["spec"]["ports"][0]["port"], 7700);
}

/// Without `--agents`: one agent per 16K clients of the largest population
/// (256K users: 16), as many responders; no namespace written.
#[test]
fn render_sizes_the_agents_from_the_largest_population() {
    let (_dir, objects) = render(&study("tn3270-capacity.toml"), &[]);
    let agents = object(&objects, "Job", "tn3270-capacity-agents");
    assert_eq!(agents["spec"]["completions"], 16);
    let responders = object(&objects, "Deployment", "tn3270-capacity-responder");
    assert_eq!(responders["spec"]["replicas"], 16);
    assert!(agents["metadata"].get("namespace").is_none());
    let image = &agents["spec"]["template"]["spec"]["containers"][0]["image"];
    assert_eq!(image, &format!("stackbench:{}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn render_takes_name_and_results_claim() {
    let (_dir, objects) = render(
        &study("quick.toml"),
        &[
            "--agents",
            "2",
            "--name",
            "smoke",
            "--results-claim",
            "sb-results",
        ],
    );
    let controller = object(&objects, "Job", "smoke-controller");
    let volume = &controller["spec"]["template"]["spec"]["volumes"][1];
    assert_eq!(volume["persistentVolumeClaim"]["claimName"], "sb-results");
    let agents = object(&objects, "Job", "smoke-agents");
    let command = strings(&agents["spec"]["template"]["spec"]["containers"][0]["command"]);
    assert_eq!(command[3], "smoke-controller:7700");
}

/// `k8s render ARGS…` (with a fresh `-o DIR`) exits 2 with one line holding
/// `needle`, and writes nothing.
fn refused(file: &Path, args: &[&str], needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = stackbench()
        .args(["k8s", "render"])
        .arg(file)
        .args(args)
        .arg("-o")
        .arg(&out_dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {err}"
    );
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(out.stdout.is_empty());
    assert!(!out_dir.exists(), "{args:?} wrote {}", out_dir.display());
}

#[test]
fn render_refuses_bad_input_in_one_line_writing_nothing() {
    let tn3270 = study("tn3270-capacity.toml");
    refused(
        &tn3270,
        &["--agents", "0"],
        "--agents 0: give at least 1 agent",
    );
    // The smallest step is 8K = 8192 clients, in one class.
    refused(
        &tn3270,
        &["--agents", "262145"],
        "agents 262145: RR8K(100B/800B) has a class of 8192 clients and every agent runs a \
         share of every class: use at most 8192 agents",
    );
    refused(
        &tn3270,
        &["--agents", "4", "--responders", "0"],
        "--responders 0",
    );
    refused(
        &tn3270,
        &["--agents", "4", "--responders", "5"],
        "give at most 4",
    );
    refused(
        &tn3270,
        &["--name", "9lives"],
        "--name 9lives: must start with a lowercase letter (an RFC 1035 DNS label)",
    );
    refused(
        &tn3270,
        &["--name", "Perf"],
        "--name Perf: holds 'P' at position 1",
    );
    refused(
        &tn3270,
        &["--name", "perf-"],
        "must end with a letter or digit",
    );
    // 63 - len("-controller") = 52 characters at most.
    let long = "a".repeat(53);
    refused(
        &tn3270,
        &["--name", &long],
        "has 53 characters: at most 52 here",
    );
    refused(
        &tn3270,
        &["--namespace", "team_a"],
        "--namespace team_a: holds '_' at position 5",
    );
    refused(&tn3270, &["--image", "a b"], "--image 'a b'");
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.toml");
    std::fs::write(
        &broken,
        "name = \"b\"\nworkloads = [\"RR1(1B/1B)\"]\nduration = \"fast\"\n",
    )
    .unwrap();
    refused(&broken, &[], "broken.toml:3:");
    let badly_named = dir.path().join("named.toml");
    std::fs::write(
        &badly_named,
        "name = \"My Study\"\nworkloads = [\"RR1(1B/1B)\"]\n",
    )
    .unwrap();
    refused(
        &badly_named,
        &[],
        "study name 'My Study' is not a Kubernetes name prefix",
    );
    refused(
        &dir.path().join("missing.toml"),
        &[],
        "missing.toml: cannot read",
    );
}

/// The responder's rendered readiness probe, run here against the rendered
/// responder command: it fails before the responder listens and passes
/// once it does, reading the socket table (the probe a kubelet runs). Both
/// are moved from the rendered port, which this host may be using, to a free
/// one.
#[test]
fn the_rendered_readiness_probe_sees_the_rendered_responder_listen() {
    let (_dir, objects) = render(&study("quick.toml"), &["--agents", "1"]);
    let deployment = object(&objects, "Deployment", "quick-responder");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let port = std::net::TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let moved = |words: Vec<&str>, from: &str, to: &str| -> Vec<String> {
        assert!(
            words.iter().any(|w| w.contains(from)),
            "{from} in {words:?}"
        );
        words.iter().map(|w| w.replace(from, to)).collect()
    };
    // The probe greps /proc/net/tcp* for the port in hex, listening.
    let probe = moved(
        strings(&container["readinessProbe"]["exec"]["command"]),
        &format!(":{:04X} ", 7701),
        &format!(":{port:04X} "),
    );
    let run_probe = || Command::new(&probe[0]).args(&probe[1..]).status().unwrap();
    assert!(
        !run_probe().success(),
        "the probe passed before the responder listened on {port}"
    );
    let command = moved(
        strings(&container["command"]),
        "0.0.0.0:7701",
        &format!("0.0.0.0:{port}"),
    );
    assert_eq!(command[0], "stackbench");
    // The token as the Secret gives it (a non-loopback serve needs one).
    let secret = object(&objects, "Secret", "quick-token");
    let mut serve = Command::cargo_bin("stackbench")
        .unwrap()
        .args(&command[1..])
        .env(
            "STACKBENCH_TOKEN",
            secret["stringData"]["token"].as_str().unwrap(),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(serve.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready = run_probe();
    serve.kill().unwrap();
    serve.wait().unwrap();
    assert!(
        line.contains(&format!("listening on 0.0.0.0:{port}")),
        "{line}"
    );
    assert!(
        ready.success(),
        "the probe did not see the responder listen"
    );
}

/// The pinned validator: `STACKBENCH_K8S_VALIDATE`, else
/// `kubernetes-validate` on PATH, when it runs and is the version
/// deploy/k8s-validate.txt pins; else the tier is skipped (or fails where
/// required).
fn validator(test: &str) -> Option<PathBuf> {
    let pins = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/k8s-validate.txt"),
    )
    .unwrap();
    let pinned = pins
        .lines()
        .find_map(|l| l.strip_prefix("kubernetes-validate=="))
        .expect("deploy/k8s-validate.txt pins kubernetes-validate")
        .trim()
        .to_string();
    let command = std::env::var_os("STACKBENCH_K8S_VALIDATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("kubernetes-validate"));
    let why = match Command::new(&command).arg("--version").output() {
        Ok(out) if String::from_utf8_lossy(&out.stdout).trim() == pinned => return Some(command),
        Ok(out) => format!(
            "{} is version '{}', not the pinned {pinned}",
            command.display(),
            String::from_utf8_lossy(&out.stdout).trim()
        ),
        Err(e) => format!(
            "{} does not run ({e}): pip install -r deploy/k8s-validate.txt into a venv and \
             set STACKBENCH_K8S_VALIDATE to its bin/kubernetes-validate",
            command.display()
        ),
    };
    skip(Tier::K8sSchema, test, &why);
    None
}

/// `kubernetes-validate --strict` of `files` against [`KUBERNETES`].
fn validate(command: &Path, files: &[PathBuf]) -> std::process::Output {
    Command::new(command)
        .args(["--strict", "--kubernetes-version", KUBERNETES])
        .args(files)
        .output()
        .unwrap()
}

fn written(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[test]
fn every_rendered_object_validates_against_the_kubernetes_schema() {
    let Some(command) = validator("the rendered manifests against the Kubernetes schema") else {
        return;
    };
    for (file, args) in [
        ("tn3270-capacity.toml", &["--namespace", "perf"][..]),
        (
            "quick.toml",
            &["--agents", "2", "--results-claim", "sb-results"][..],
        ),
    ] {
        let (dir, objects) = render(&study(file), args);
        let files = written(dir.path());
        let out = validate(&command, &files);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{file}: {text}");
        assert_eq!(text.matches(" passed ").count(), objects.len(), "{text}");
    }
}

/// The check can fail: a rendered Job with a misspelt field, then with a
/// count of the wrong type, is refused, naming the place.
#[test]
fn the_schema_check_rejects_a_broken_manifest() {
    let Some(command) = validator("a broken manifest against the Kubernetes schema") else {
        return;
    };
    let (dir, _) = render(&study("quick.toml"), &["--agents", "2"]);
    let path = dir.path().join("out/30-job-quick-agents.json");
    let mut job: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let spec = job["spec"].as_object_mut().unwrap();
    let limit = spec.remove("backoffLimitPerIndex").unwrap();
    spec.insert("backoffLimitPerIndx".into(), limit);
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, job.to_string()).unwrap();
    let out = validate(&command, std::slice::from_ref(&broken));
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("'backoffLimitPerIndx' was unexpected"),
        "{text}"
    );

    let spec = job["spec"].as_object_mut().unwrap();
    let limit = spec.remove("backoffLimitPerIndx").unwrap();
    spec.insert("backoffLimitPerIndex".into(), limit);
    spec.insert("completions".into(), Value::from("two"));
    std::fs::write(&broken, job.to_string()).unwrap();
    let out = validate(&command, &[broken]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("spec.completions: 'two' is not of type"),
        "{text}"
    );
}

/// One N serves every step, and a run refuses more agents than a class has
/// clients: render refuses such a step by that same rule, before the
/// cluster would run the steps before it (it used to write the manifests
/// with a note, and the study failed at that step).
#[test]
fn render_refuses_more_agents_than_a_steps_class_has_clients() {
    refused(
        &study("tn3270-capacity.toml"),
        &["--agents", "9000"],
        "tn3270-capacity.toml: agents 9000: RR8K(100B/800B) has a class of 8192 clients",
    );
}

/// The rendered commands, run here with the cluster's names replaced by
/// loopback addresses: the responder Deployment's `serve`, the controller
/// Job's shell wrapper and study, and the Indexed Job's agents, each agent
/// taking its segment from `JOB_COMPLETION_INDEX` and `STACKBENCH_AGENTS`
/// as in the cluster. The controller's log holds the study's merged record.
#[test]
fn the_rendered_commands_run_a_study_over_agents_here() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k8s-local.toml");
    std::fs::write(
        &file,
        "name = \"k8s-local\"\nworkloads = [\"RR4(64B/64B)\"]\ntransactions = 4000\n",
    )
    .unwrap();
    let (_out, objects) = render(&file, &["--agents", "2", "--responders", "1"]);
    let bin = assert_cmd::cargo::cargo_bin("stackbench");
    let free = stackbench_testkit::server::free_port;
    let (rport, cport) = (free(), free());
    let local = |words: Vec<&str>| -> Vec<String> {
        let db = dir.path().join("results.db");
        words
            .iter()
            .map(|w| {
                w.replace("/etc/stackbench/study.toml", &file.to_string_lossy())
                    .replace("0.0.0.0:7701", &format!("127.0.0.1:{rport}"))
                    .replace("0.0.0.0:7700", &format!("127.0.0.1:{cport}"))
                    .replace("k8s-local-responder:7701", &format!("127.0.0.1:{rport}"))
                    .replace("k8s-local-controller:7700", &format!("127.0.0.1:{cport}"))
                    .replace("/results/results.db", &db.to_string_lossy())
            })
            .collect()
    };
    let container = |kind: &str, name: &str| {
        object(&objects, kind, name)["spec"]["template"]["spec"]["containers"][0].clone()
    };
    let command = |c: &Value| {
        let mut words = strings(&c["command"]);
        if let Some(args) = c["args"].as_array() {
            words.extend(args.iter().map(|a| a.as_str().unwrap()));
        }
        local(words)
    };
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let spawn = |words: &[String], env: &[(String, String)]| {
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..])
            .env("PATH", &path)
            .env("STACKBENCH_DB", dir.path().join("unused.db"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.spawn().unwrap()
    };
    // Each container's environment as the cluster would set it: values,
    // and the Secret's keys where an entry names them (the run token).
    let secret = object(&objects, "Secret", "k8s-local-token");
    let env_of = |c: &Value| -> Vec<(String, String)> {
        c["env"].as_array().map_or_else(Vec::new, |env| {
            env.iter()
                .filter_map(|e| {
                    let value = match e["valueFrom"]["secretKeyRef"]["key"].as_str() {
                        Some(key) => secret["stringData"][key].as_str()?,
                        None => e["value"].as_str()?,
                    };
                    Some((e["name"].as_str()?.into(), value.into()))
                })
                .collect()
        })
    };
    let responder_container = container("Deployment", "k8s-local-responder");
    let responder_words = command(&responder_container);
    let mut responder = spawn(&responder_words, &env_of(&responder_container));
    let agent_container = container("Job", "k8s-local-agents");
    let agent_words = command(&agent_container);
    let agent_env = env_of(&agent_container);
    let controller_container = container("Job", "k8s-local-controller");
    let controller = spawn(
        &command(&controller_container),
        &env_of(&controller_container),
    );
    let agents: Vec<_> = (0..2)
        .map(|i| {
            let mut env = agent_env.clone();
            env.push(("JOB_COMPLETION_INDEX".into(), i.to_string()));
            spawn(&agent_words, &env)
        })
        .collect();
    let out = crate::common::wait_bounded(controller, std::time::Duration::from_secs(120));
    // A hang check, not a timing: on a loaded CI machine (the whole suite
    // in parallel on 2 CPUs) an agent once took over 10 s to exit after
    // the controller's bye.
    for a in agents {
        let done = crate::common::wait_bounded(a, std::time::Duration::from_secs(60));
        assert!(
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
    }
    let _ = responder.kill();
    let _ = responder.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, export) = stdout
        .split_once("--- stackbench results (JSON) ---")
        .expect("the controller prints its results after the marker");
    let runs: Value = serde_json::from_str(export.trim()).unwrap();
    let run = runs.as_array().and_then(|r| r.first()).unwrap_or(&runs);
    let record = if run["record"].is_object() {
        &run["record"]
    } else {
        run
    };
    assert_eq!(record["agents"]["count"], 2, "{record}");
    assert_eq!(record["agents"]["launcher"], "external");
    assert_eq!(record["classes"][0]["transactions"], 4000);
}

/// Beside "apply with", render reminds that the image it names must be
/// built and pushed first, and how.
#[test]
fn render_says_the_image_must_be_built_and_pushed() {
    let dir = tempfile::tempdir().unwrap();
    let out = stackbench()
        .args(["k8s", "render"])
        .arg(study("quick.toml"))
        .args(["--agents", "2", "--image", "registry.example/sb:1", "-o"])
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("apply with: kubectl apply -f "), "{err}");
    assert!(
        err.contains(
            "first build and push image registry.example/sb:1 where the cluster pulls from: \
             podman build -f deploy/Containerfile -t registry.example/sb:1"
        ) && err.contains("podman push registry.example/sb:1"),
        "{err}"
    );
}
