//! `--protocol http1` end to end: against the embedded responder (RR and
//! CRR with exact counts, the setting stored), and against a real nginx the
//! test starts on a loopback port with a configuration and docroot of its
//! own (files of the bodies the codec asks for), stopped and removed
//! afterwards. The nginx tier skips where there is no nginx, and fails
//! instead when `STACKBENCH_REQUIRE` names it.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use stackbench_engine::app::http1::body_for;
use stackbench_model::Workload;
use stackbench_testkit::{skip, Tier};

use crate::common::run_json;

fn class(record: &Value) -> &Value {
    &record["classes"][0]
}

#[test]
fn rr_and_crr_over_http1_count_exactly_against_the_responder() {
    for (workload, n) in [("RR4(100B/8kB)", 403), ("CRR3(200B/200B)", 151)] {
        let record = run_json(workload, n, &["--protocol", "http1"]);
        let c = class(&record);
        assert_eq!(c["transactions"], n, "{workload}");
        assert_eq!(c["errors"], 0, "{workload}: {c}");
        // Sizes are whole messages on the wire.
        let req = c["request_bytes"].as_u64().unwrap();
        let resp = c["response_bytes"].as_u64().unwrap();
        assert_eq!(c["tx_bytes"], n * req, "{workload}");
        assert_eq!(c["rx_bytes"], n * resp, "{workload}");
        assert_eq!(record["settings"]["protocol"], "http1");
    }
    // The default stays raw, and is stored too.
    let record = run_json("RR1(1B/1B)", 5, &[]);
    assert_eq!(record["settings"]["protocol"], "raw");
}

/// A private nginx: configuration, docroot and logs in a temporary
/// directory; killed and removed on drop.
struct Nginx {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nginx_binary() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("nginx"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain([PathBuf::from("/usr/sbin/nginx")])
        .find(|p| p.is_file())
}

/// Starts nginx serving a file of each of `bodies` bytes at `/N`, and
/// `locations` (configuration inside its `server` block): one process.
fn start_nginx(binary: &Path, bodies: &[u64], locations: &str) -> Nginx {
    start_nginx_with(binary, bodies, locations, "master_process off;")
}

/// [`start_nginx`] with `processes` (`master_process on; …` for a master
/// and its workers).
fn start_nginx_with(binary: &Path, bodies: &[u64], locations: &str, processes: &str) -> Nginx {
    let dir = tempfile::tempdir().unwrap();
    let www = dir.path().join("www");
    std::fs::create_dir(&www).unwrap();
    // Workers started by a root master run as nobody: the docroot must be
    // theirs to read (a temporary directory is the owner's only).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for &n in bodies {
        std::fs::write(www.join(n.to_string()), vec![b'x'; n as usize]).unwrap();
    }
    // A free loopback port (the listener closes before nginx binds it).
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let d = dir.path().display();
    // In the foreground, one process as this user (no master, no user
    // switch), every path inside the directory; keep-alive unbounded so an
    // RR connection is never closed by the server mid-run.
    let conf = format!(
        "daemon off; {processes} worker_processes 1; pid {d}/nginx.pid;\n\
         error_log {d}/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n\
           access_log off;\n\
           client_body_temp_path {d}/t1; proxy_temp_path {d}/t2; fastcgi_temp_path {d}/t3;\n\
           uwsgi_temp_path {d}/t4; scgi_temp_path {d}/t5;\n\
           keepalive_requests 100000000;\n\
           server {{ listen 127.0.0.1:{port}; root {www}; {locations} }}\n\
         }}\n",
        www = www.display()
    );
    let conf_path = dir.path().join("nginx.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let child = Command::new(binary)
        .arg("-p")
        .arg(dir.path())
        .arg("-e")
        .arg(dir.path().join("error.log"))
        .arg("-c")
        .arg(&conf_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let nginx = Nginx {
        child,
        port,
        _dir: dir,
    };
    // Bounded wait for its listener (a start-up check, not a timing claim).
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nginx did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    nginx
}

#[test]
fn rr_and_crr_over_http1_against_nginx() {
    let test = "rr_and_crr_over_http1_against_nginx";
    let Some(binary) = nginx_binary() else {
        return skip(Tier::Nginx, test, "no nginx binary on PATH or in /usr/sbin");
    };
    let workloads = [("RR4(100B/8kB)", 300), ("CRR2(100B/1kB)", 60)];
    // Files of the bodies the codec asks for (`/N`), with and without the
    // Connection: close line it counts in a CRR server-close answer.
    let bodies: Vec<u64> = workloads
        .iter()
        .map(|(w, _)| w.parse::<Workload>().unwrap().classes[0].response_bytes)
        .flat_map(|r| [body_for(r, false), body_for(r, true)])
        .collect();
    // A location that answers 500 (with nginx's own HTML body) at the
    // path a 555-byte response asks for; a 777-byte one has no file: 404.
    let locations = format!("location = /{} {{ return 500; }}", body_for(555, false));
    let nginx = start_nginx(&binary, &bodies, &locations);
    let target = format!("http://127.0.0.1:{}", nginx.port);
    for (workload, n) in workloads {
        let flags = ["--protocol", "http1", "--target", &target];
        let record = run_json(workload, n, &flags);
        let c = class(&record);
        assert_eq!(c["transactions"], n, "{workload}: {c}");
        assert_eq!(c["errors"], 0, "{workload}: {c}");
        assert_eq!(c["http_status"]["codes"]["200"], n, "{workload}: {c}");
        let req = c["request_bytes"].as_u64().unwrap();
        let resp = c["response_bytes"].as_u64().unwrap();
        assert_eq!(c["tx_bytes"], n * req, "{workload}");
        // nginx's own headers (Server, Date, ETag, …) make its answers
        // longer than the notation's size: the record says what moved.
        let rx = c["rx_bytes"].as_u64().unwrap();
        assert!(rx > n * resp, "{workload}: {rx}");
        assert_eq!(record["settings"]["target"], target.as_str());
    }
    // Answers that say the request failed: each counted per code and as an
    // error, the connection kept. Every answer failing is above the default
    // bound: the run is incomplete (exit status 3) in one line naming the
    // codes, with what was measured kept; under a raised bound it completes.
    for (workload, code) in [("RR1(100B/777B)", "404"), ("RR1(100B/555B)", "500")] {
        let run = |extra: &[&str]| {
            crate::common::stackbench()
                .args([
                    "run",
                    workload,
                    "--transactions",
                    "5",
                    "--json",
                    "--no-store",
                ])
                .args(["--protocol", "http1", "--target", &target])
                .args(extra)
                .output()
                .unwrap()
        };
        let out = run(&[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{workload}: {stderr}");
        let record = crate::common::json_of(&out);
        let c = class(&record);
        assert_eq!(record["complete"], false, "{workload}");
        let reason = record["incomplete_reason"].as_str().unwrap();
        let needle = format!("5 of 5 responses were not 2xx (100.0%: {code} ×5)");
        assert!(reason.contains(&needle), "{workload}: {reason}");
        assert_eq!(c["transactions"], 5, "{workload}: {c}");
        assert_eq!(c["http_status"]["codes"][code], 5, "{workload}: {c}");
        assert_eq!(c["error_counts"]["http_status"], 5, "{workload}: {c}");
        let out = run(&["--http-error-share", "100%"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{workload}: {stderr}");
        let record = crate::common::json_of(&out);
        assert_eq!(record["complete"], true, "{workload}");
        assert_eq!(class(&record)["errors"], 5, "{workload}");
    }
    drop(nginx);
}

/// The pids of `nginx`'s processes: the child and its workers.
fn nginx_pids(nginx: &Nginx) -> Vec<u64> {
    let root = nginx.child.id();
    let mut pids = vec![u64::from(root)];
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u64>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let parent = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(1)?.parse::<u32>().ok());
        if parent == Some(root) {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    pids
}

/// Against nginx on this host (a master and one worker), the record's
/// server side is nginx's: found by its listening socket, its pids and
/// executable stored, its processes' CPU per request above zero beside the
/// driver's, the kernel memory of its connections per connection; and it
/// is shown under the table. `--server-pid` names the same processes; a
/// server nothing on this host listens for is a note, not an error.
#[test]
fn the_server_side_of_nginx_is_its_own_processes() {
    let test = "the_server_side_of_nginx_is_its_own_processes";
    let Some(binary) = nginx_binary() else {
        return skip(Tier::Nginx, test, "no nginx binary on PATH or in /usr/sbin");
    };
    let workload = "RR4(100B/4kB)";
    let body = body_for(4096, false);
    let nginx = start_nginx_with(&binary, &[body], "", "master_process on;");
    // The worker is forked after the listener opens: wait for it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while nginx_pids(&nginx).len() < 2 {
        assert!(Instant::now() < deadline, "nginx started no worker");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pids = nginx_pids(&nginx);
    let target = format!("http://127.0.0.1:{}", nginx.port);
    let flags = ["--protocol", "http1", "--target", &target];
    let record = run_json(workload, 3000, &flags);
    let server = &record["server_process"];
    assert_eq!(server["found_by"], "listening_socket", "{server}");
    assert_eq!(
        server["listener"],
        format!("127.0.0.1:{}", nginx.port).as_str()
    );
    let found: Vec<u64> = server["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    assert_eq!(found, pids, "{server}");
    let exe = server["exe"].as_str().unwrap();
    assert!(exe.ends_with("nginx"), "{exe}");
    let cpu = &class(&record)["cpu"];
    let nginx_us = cpu["server"]["process_cpu_us_per_tran"].as_f64().unwrap();
    let driver_us = cpu["client"]["process_cpu_us_per_tran"].as_f64().unwrap();
    assert!(nginx_us > 0.0 && driver_us > 0.0, "{cpu}");
    assert!(cpu["server"]["disk"]["write_bytes"].is_u64(), "{cpu}");
    let memory = &class(&record)["memory"]["server"];
    assert_eq!(memory["kernel_sock_sockets"], 4, "{memory}");
    assert!(memory["rss_bytes"].as_u64().unwrap() > 0, "{memory}");

    // The table says whose processes the server side was.
    let out = crate::common::stackbench()
        .args(["run", workload, "--transactions", "200", "--no-store"])
        .args(flags)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = format!("server side: {exe} (pids ");
    assert!(stdout.contains(&line), "{stdout}");
    assert!(stdout.contains("server processes "), "{stdout}");

    // Given by pid: the worker alone.
    let worker = pids[1].to_string();
    let given = ["--server-pid", worker.as_str()];
    let record = run_json(workload, 300, &[&flags[..], &given[..]].concat());
    let server = &record["server_process"];
    assert_eq!(server["found_by"], "server_pid", "{server}");
    assert_eq!(server["pids"][0], pids[1], "{server}");
    assert_eq!(
        record["settings"]["server_pid"],
        serde_json::json!([pids[1]])
    );
    drop(nginx);
}

#[test]
fn contradictions_with_http1_are_refused_in_one_line() {
    use crate::common::refused;
    let target = ["RR1(1B/1B)", "--target", "http://127.0.0.1:9"];
    refused("run", &target, "an http:// target is a plain HTTP server");
    let waitall = ["RR1(1B/1B)", "--protocol", "http1", "--waitall"];
    refused("run", &waitall, "drop waitall");
    refused(
        "run",
        &["RR1(1B/1B)", "--protocol", "http2"],
        "unknown application protocol: use raw, http1",
    );
}

/// examples/http1.toml runs as written (counts, not durations), both
/// variants complete.
#[test]
fn the_http1_example_study_runs() {
    let completed = crate::common::example_study_completes("http1.toml", &["http1", "raw"]);
    assert_eq!(completed, [3, 3]);
}
