//! `--protocol http1` end to end: against the embedded responder (RR and
//! CRR with exact counts, the setting stored), and against a real nginx the
//! test starts on a loopback port with a configuration and docroot of its
//! own (files of the bodies the codec asks for), stopped and removed
//! afterwards. The nginx tier skips where there is no nginx, and fails
//! instead when `STACKBENCH_REQUIRE` names it.

use std::net::TcpStream;
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

/// HTTP/1.1 over TLS to stackbench serve offers ALPN http/1.1, which the
/// responder selects and the record stores; raw payloads offer none; and
/// stackbench's own certificate is never verified, so nothing says so.
#[test]
fn alpn_names_http1_over_tls_and_nothing_for_raw_payloads() {
    let record = run_json(
        "CRR2(100B/1kB)",
        20,
        &["--protocol", "http1", "--transport", "tls"],
    );
    let tls = &class(&record)["tls"];
    assert_eq!(tls["alpn"], "http/1.1", "{tls}");
    assert!(tls.get("server_verified").is_none(), "{tls}");
    assert_eq!(tls["full_handshakes"], 20, "{tls}");
    let record = run_json("RR1(100B/1kB)", 5, &["--transport", "tls"]);
    assert!(class(&record)["tls"].get("alpn").is_none());
}

/// A private nginx: configuration, docroot and logs in a temporary
/// directory; killed and removed on drop.
pub(crate) struct Nginx {
    child: Child,
    pub(crate) port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn nginx_binary() -> Option<PathBuf> {
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
    start_nginx_in(
        tempfile::tempdir().unwrap(),
        binary,
        bodies,
        ("", locations),
        "master_process off;",
    )
}

/// [`start_nginx`] with `processes` (`master_process on; …` for a master
/// and its workers).
fn start_nginx_with(binary: &Path, bodies: &[u64], locations: &str, processes: &str) -> Nginx {
    start_nginx_in(
        tempfile::tempdir().unwrap(),
        binary,
        bodies,
        ("", locations),
        processes,
    )
}

/// [`start_nginx`] in `dir`, with `listen` after the listen address (`ssl`)
/// and `server` (certificate lines, locations) in its `server` block, and
/// `processes` (`master_process off;`: one process).
pub(crate) fn start_nginx_in(
    dir: tempfile::TempDir,
    binary: &Path,
    bodies: &[u64],
    (listen, locations): (&str, &str),
    processes: &str,
) -> Nginx {
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
    let port = stackbench_testkit::server::free_port();
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
           server {{ listen 127.0.0.1:{port} {listen}; root {www}; {locations} }}\n\
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
    let log = dir.path().join("error.log");
    let nginx = Nginx {
        child,
        port,
        _dir: dir,
    };
    // Bounded wait for its listener (a start-up check, not a timing claim).
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "nginx did not listen on {port}: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
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

/// Runs `openssl` with `args` in `dir`, which must succeed.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A test CA (`ca.pem`) and a server certificate it signed for 127.0.0.1
/// (`srv.pem`, `srv.key`), and a self-signed one no CA vouches for
/// (`self.pem`, `self.key`), all in `dir`.
pub(crate) fn make_certificates(dir: &Path) {
    let rsa = ["-newkey", "rsa:2048", "-nodes"];
    openssl(
        dir,
        &[
            &["req", "-x509"],
            &rsa[..],
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                "/CN=stackbench test CA",
            ],
        ]
        .concat(),
    );
    openssl(
        dir,
        &[
            &["req"],
            &rsa[..],
            &[
                "-keyout",
                "srv.key",
                "-out",
                "srv.csr",
                "-subj",
                "/CN=127.0.0.1",
            ],
        ]
        .concat(),
    );
    std::fs::write(dir.join("ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "srv.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "srv.pem",
            "-days",
            "2",
            "-extfile",
            "ext",
        ],
    );
    openssl(
        dir,
        &[
            &["req", "-x509"],
            &rsa[..],
            &[
                "-keyout",
                "self.key",
                "-out",
                "self.pem",
                "-days",
                "2",
                "-subj",
                "/CN=127.0.0.1",
            ],
        ]
        .concat(),
    );
}

/// HTTPS against nginx with a certificate of a test CA: verified against
/// `--ca`, ALPN http/1.1 stored, full handshakes counted per connection,
/// resumed ones with a resume ratio; a certificate that does not verify is
/// refused in one line before anything starts, and runs with --insecure
/// under the tls_unverified warning.
#[test]
fn https_against_nginx_verifies_the_certificate_and_counts_handshakes() {
    let test = "https_against_nginx_verifies_the_certificate_and_counts_handshakes";
    let Some(binary) = nginx_binary() else {
        return skip(Tier::Nginx, test, "no nginx binary on PATH or in /usr/sbin");
    };
    let dir = tempfile::tempdir().unwrap();
    make_certificates(dir.path());
    let d = dir.path().to_path_buf();
    let ca = d.join("ca.pem").display().to_string();
    // nginx's certificate lines for `cert` (.pem and .key) in `dir`.
    let server = |dir: &Path, cert: &str| {
        format!(
            "ssl_certificate {d}/{cert}.pem; ssl_certificate_key {d}/{cert}.key; \
             ssl_protocols TLSv1.2 TLSv1.3; ssl_session_cache shared:S:1m;",
            d = dir.display()
        )
    };
    // The body every request of the URL's path names: /x, 4000 bytes.
    let nginx = start_nginx_in(
        dir,
        &binary,
        &[],
        ("ssl", &server(&d, "srv")),
        "master_process off;",
    );
    std::fs::write(d.join("www/x"), vec![b'x'; 4000]).unwrap();
    let target = format!("https://127.0.0.1:{}/x", nginx.port);
    let https = ["--protocol", "http1", "--target", &target, "--ca", &ca];
    for (version, resume) in [("1.2", "0"), ("1.2", "1"), ("1.3", "1")] {
        let flags = [
            &https[..],
            &["--tls-version", version, "--resume-ratio", resume],
        ]
        .concat();
        let record = run_json("RR2(100B/4kB)+CRR2(100B/4kB)", 100, &flags);
        assert_eq!(record["settings"]["transport"], "tls");
        for c in record["classes"].as_array().unwrap() {
            let tls = &c["tls"];
            assert_eq!(c["transactions"], 100, "{c}");
            assert_eq!(c["http_status"]["codes"]["200"], 100, "{c}");
            assert_eq!(tls["version"], version, "{tls}");
            assert_eq!(tls["alpn"], "http/1.1", "{tls}");
            assert_eq!(tls["server_verified"], true, "{tls}");
            // nginx answers 4000 bytes of body and its head.
            assert!(c["rx_bytes"].as_u64().unwrap() > 100 * 4000, "{c}");
        }
        let crr = &record["classes"][1]["tls"];
        let (full, resumed) = (
            crr["full_handshakes"].as_u64().unwrap(),
            crr["resumed_handshakes"].as_u64().unwrap(),
        );
        assert_eq!(full + resumed, 100, "{crr}");
        if resume == "0" {
            assert_eq!(resumed, 0, "{crr}");
        } else {
            // Each worker's first connection has no session to offer.
            assert!(resumed >= 95, "{crr}");
        }
    }
    drop(nginx);

    // A certificate no CA of ours signed.
    let dir = tempfile::tempdir().unwrap();
    make_certificates(dir.path());
    let d = dir.path().to_path_buf();
    let nginx = start_nginx_in(
        dir,
        &binary,
        &[],
        ("ssl", &server(&d, "self")),
        "master_process off;",
    );
    std::fs::write(d.join("www/x"), vec![b'x'; 100]).unwrap();
    let target = format!("https://127.0.0.1:{}/x", nginx.port);
    let ca = d.join("ca.pem").display().to_string();
    let base = [
        "RR1(100B/100B)",
        "--transactions",
        "10",
        "--protocol",
        "http1",
        "--target",
        &target,
    ];
    crate::common::refused(
        "run",
        &[&base[..], &["--ca", &ca]].concat(),
        "the server's certificate does not verify against --ca",
    );
    let record = run_json(
        "RR1(100B/100B)",
        10,
        &[&base[3..], &["--insecure"]].concat(),
    );
    let c = class(&record);
    assert_eq!(c["tls"]["server_verified"], false, "{c}");
    let codes: Vec<&str> = record["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["code"].as_str())
        .collect();
    assert!(codes.contains(&"tls_unverified"), "{codes:?}");
    assert_eq!(record["settings"]["insecure"], true);
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

/// A TCP server on a loopback port that greets every connection with an
/// SSH banner and closes it: a server that is not HTTP (nor TLS).
fn banner_server() -> u16 {
    stackbench_testkit::server::serve_loopback(None, |_, mut conn| {
        use std::io::Write;
        let _ = conn.write_all(b"SSH-2.0-OpenSSH_9.6\r\n");
    })
}

/// A port nothing listens on (a listener's, closed).
fn closed_port() -> u16 {
    stackbench_testkit::server::free_port()
}

/// An HTTP target's bad input and faults, each one line and exit 2 before
/// anything runs: the transport its scheme contradicts, verification
/// settings without an https:// target or with each other, a CA file that
/// is not one, a sidecar or kTLS mode (which cannot reach a foreign
/// server), a host that does not resolve, nothing listening, and servers
/// that speak neither HTTP nor TLS: an SSH banner and stackbench's own
/// responder's control port.
#[test]
fn https_and_http_target_faults_are_refused_in_one_line_before_start() {
    use crate::common::refused;
    let closed = format!("127.0.0.1:{}", closed_port());
    let https = format!("https://{closed}/x");
    let http = format!("http://{closed}");
    let run = |target: &str, extra: &[&str], needle: &str| {
        let args = [
            &[
                "RR1(100B/100B)",
                "--transactions",
                "5",
                "--protocol",
                "http1",
                "--target",
                target,
            ][..],
            extra,
        ]
        .concat();
        refused("run", &args, needle);
    };
    run(
        &https,
        &["--transport", "tcp"],
        "is HTTP over TLS, not clear text: drop --transport",
    );
    run(&https, &["--transport", "mptcp"], "(https:// implies tls)");
    run(
        &http,
        &["--transport", "tls"],
        &format!("for TLS give https://{closed}"),
    );
    run(
        &http,
        &["--insecure"],
        "insecure is about verifying an https:// target's certificate",
    );
    run(
        &https,
        &["--insecure", "--ca", "/x.pem"],
        "drop one of them",
    );
    run(
        &https,
        &["--ca", "/nonexistent/ca.pem"],
        "--ca /nonexistent/ca.pem: cannot read it",
    );
    let not_pem = tempfile::NamedTempFile::new().unwrap();
    let not_pem = not_pem.path().display().to_string();
    run(&https, &["--ca", &not_pem], "not a PEM certificate");
    run(&https, &["--tls-mode", "sidecar"], "use --tls-mode inline");
    run(
        "https://host.invalid:443",
        &[],
        "target https://host.invalid:443: host host.invalid does not resolve",
    );
    run(
        &https,
        &[],
        &format!("nothing accepts a connection at {closed}"),
    );
    run(&http, &[], "start the HTTP server there, or give its port");
    let ssh = format!("127.0.0.1:{}", banner_server());
    run(
        &format!("http://{ssh}"),
        &[],
        "not an HTTP server: its answer to GET / begins \"SSH-2.0-OpenSSH_9.6\"",
    );
    run(&format!("https://{ssh}"), &[], "the TLS handshake failed");
    // stackbench serve's control port speaks JSON lines, not HTTP: it
    // refuses the GET (no token handshake) in one.
    let serve = crate::run::Serve::start();
    run(
        &format!("http://{}", serve.addr),
        &[],
        "not an HTTP server: its answer to GET / begins \"{\\\"type\\\":\\\"error\\\"",
    );
}

/// examples/http1.toml runs as written (counts, not durations), both
/// variants complete.
#[test]
fn the_http1_example_study_runs() {
    let completed = crate::common::example_study_completes("http1.toml", &["http1", "raw"]);
    assert_eq!(completed, [3, 3]);
}
