//! `--protocol ftp` end to end. Against a real vsftpd (the vsftpd tier: the
//! test starts its own as root on a loopback port, with its own config
//! file, an anonymous log-on and a directory it made, and stops it): RETR
//! and STOR streams, RR transfers on a kept log-on and CRR log-on –
//! transfer – log-off, each counted exactly, with the server's processes
//! found by their listener and their CPU counted although vsftpd forks
//! per session; and the bad inputs: no file of the size, a refused log-on.
//! Without a server: transfers against a minimal FTP server in this
//! process (EPSV and PASV, replies split and joined, the bytes counted
//! exactly), a target that is not FTP, and protocol ftp without an FTP
//! target.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use stackbench_testkit::{skip, Tier};

use crate::common::{json_of, run_json, stackbench};

fn class(record: &Value) -> &Value {
    &record["classes"][0]
}

/// A private vsftpd: configuration and files in a temporary directory;
/// killed and removed on drop.
struct Vsftpd {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Vsftpd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const VSFTPD: &str = "/usr/sbin/vsftpd";

/// Why the vsftpd tier cannot run here (`None`: it can).
fn vsftpd_missing() -> Option<&'static str> {
    if !Path::new(VSFTPD).is_file() {
        return Some("no /usr/sbin/vsftpd");
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("vsftpd chroots anonymous sessions: it runs as root");
    }
    if !std::fs::read_to_string("/etc/passwd")
        .is_ok_and(|p| p.lines().any(|l| l.starts_with("ftp:")))
    {
        return Some("no ftp user (the vsftpd package makes it)");
    }
    None
}

/// Starts vsftpd on a free loopback port serving `root/`, where `pub/`
/// holds a file of each of `files` bytes named by its size, and `in/` takes
/// anonymous uploads; `extra` lines end its configuration (empty:
/// anonymous log-on only).
fn start_vsftpd(files: &[u64], extra: &str) -> Vsftpd {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = d.join("root");
    for sub in ["root", "root/pub", "root/in", "empty"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    // The anonymous user (ftp) reads the tree and writes only in/; the
    // root of a chroot must not be writable by it (vsftpd refuses that).
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(root.join("in"), std::fs::Permissions::from_mode(0o777)).unwrap();
    for &n in files {
        let f = std::fs::File::create(root.join("pub").join(n.to_string())).unwrap();
        f.set_len(n).unwrap();
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // In the foreground, anonymous only, any passive port; the log file
    // inside the directory; no seccomp sandbox (a container may refuse it).
    let conf = format!(
        "listen=YES\nlisten_address=127.0.0.1\nlisten_port={port}\nbackground=NO\n\
         no_anon_password=YES\nanon_root={root}\n\
         write_enable=YES\nanon_upload_enable=YES\nanon_other_write_enable=YES\n\
         pasv_enable=YES\nsecure_chroot_dir={empty}\nseccomp_sandbox=NO\n\
         xferlog_enable=NO\nvsftpd_log_file={d}/vsftpd.log\nmax_clients=0\nmax_per_ip=0\n\
         {extra}\n",
        extra = if extra.is_empty() {
            "anonymous_enable=YES\nlocal_enable=NO"
        } else {
            extra
        },
        root = root.display(),
        empty = d.join("empty").display(),
        d = d.display(),
    );
    let conf_path = d.join("vsftpd.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let child = Command::new(VSFTPD)
        .arg(&conf_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server = Vsftpd { child, port, dir };
    // Bounded wait for its listener (a start-up check, not a timing claim).
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = server.child.try_wait() {
            let mut err = String::new();
            let _ = server.child.stderr.take().unwrap().read_to_string(&mut err);
            panic!("vsftpd exited ({status}) before listening on {port}: {err}");
        }
        assert!(Instant::now() < deadline, "vsftpd did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    server
}

fn run(workload: &str, n: u64, target: &str, extra: &[&str]) -> std::process::Output {
    stackbench()
        .args(["run", workload, "--transactions", &n.to_string()])
        .args([
            "--json",
            "--no-store",
            "--protocol",
            "ftp",
            "--target",
            target,
        ])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn retr_stor_rr_and_crr_against_vsftpd() {
    let test = "retr_stor_rr_and_crr_against_vsftpd";
    if let Some(why) = vsftpd_missing() {
        return skip(Tier::Vsftpd, test, why);
    }
    let server = start_vsftpd(&[1 << 20, 8192], "");
    let pub_dir = format!("ftp://127.0.0.1:{}/pub/", server.port);
    let in_dir = format!("ftp://127.0.0.1:{}/in/", server.port);
    // (workload, transactions, target, file bytes, the file goes out).
    let cases: [(&str, u64, &str, u64, bool); 4] = [
        ("STR2(1B/1MB)", 20, &pub_dir, 1 << 20, false),
        ("STR1(1MB/1B)", 10, &in_dir, 1 << 20, true),
        ("RR2(100B/8kB)", 100, &pub_dir, 8192, false),
        ("CRR2(64B/8kB)", 60, &pub_dir, 8192, false),
    ];
    for (workload, n, target, bytes, out) in cases {
        let record = run_json(workload, n, &["--protocol", "ftp", "--target", target]);
        let c = class(&record);
        assert_eq!(record["complete"], true, "{workload}: {record}");
        assert_eq!(c["transactions"], n, "{workload}: {c}");
        assert_eq!(c["errors"], 0, "{workload}: {c}");
        // The file's bytes and the control connection's commands and
        // replies (EPSV, RETR/STOR, 229, 150, 226: tens of bytes) moved.
        let (payload, control) = if out {
            (&c["tx_bytes"], &c["rx_bytes"])
        } else {
            (&c["rx_bytes"], &c["tx_bytes"])
        };
        let payload = payload.as_u64().unwrap();
        assert!(
            payload > n * bytes && payload < n * (bytes + 300),
            "{workload}: {payload}"
        );
        let control = control.as_u64().unwrap();
        assert!(
            control >= n * 10 && control < n * 300,
            "{workload}: {control}"
        );
        assert_eq!(record["server_process"]["exe"], VSFTPD, "{workload}");
        assert_eq!(record["settings"]["protocol"], "ftp");
        // Every connection logged on (CRR: once per transaction).
        let sessions = c["sessions"]["attempted"].as_u64().unwrap();
        if workload.starts_with("CRR") {
            assert!(sessions >= n, "{workload}: {sessions}");
            // Each session is a process pair vsftpd forks and reaps between
            // two samples: counted through the listener's reaped children
            // (metrics' `a_tree_counts_the_children_it_waited_for` pins
            // that; here, only that the server side has a CPU figure).
            let cpu = c["cpu"]["server"]["process"]["cpu_seconds"]
                .as_f64()
                .unwrap();
            assert!(cpu > 0.0, "{workload}: server processes' CPU {cpu}");
        } else {
            assert_eq!(sessions, c["clients"].as_u64().unwrap(), "{workload}: {c}");
        }
    }
    let stored = server.dir.path().join("root/in/1048576");
    assert_eq!(std::fs::metadata(stored).unwrap().len(), 1 << 20);
}

#[test]
fn a_missing_file_and_a_refused_log_on_end_the_run_in_one_line() {
    let test = "a_missing_file_and_a_refused_log_on_end_the_run_in_one_line";
    if let Some(why) = vsftpd_missing() {
        return skip(Tier::Vsftpd, test, why);
    }
    let server = start_vsftpd(&[1000], "");
    // No file of 2,000 bytes; one of 1,000 named as the file of 2,000.
    for (path, needle) in [
        ("pub/", "RETR /pub/2000 was answered '550"),
        (
            "pub/1000",
            "RETR /pub/1000 of 2,000 bytes: the server sent 1,000",
        ),
    ] {
        let target = format!("ftp://127.0.0.1:{}/{path}", server.port);
        let out = run("RR1(1B/2000B)", 3, &target, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        let record = json_of(&out);
        let reason = record["incomplete_reason"].as_str().unwrap();
        assert!(reason.contains(needle), "{reason}");
    }
    drop(server);
    // Local users only (vsftpd will not start with neither kind).
    let refusing = start_vsftpd(&[], "anonymous_enable=NO\nlocal_enable=YES");
    let target = format!("ftp://127.0.0.1:{}/", refusing.port);
    let out = run("RR1(1B/1000B)", 3, &target, &[]);
    assert_eq!(out.status.code(), Some(3));
    let record = json_of(&out);
    let reason = record["incomplete_reason"].as_str().unwrap();
    assert!(
        reason.contains("log-on as anonymous was answered '530"),
        "{reason}"
    );
    assert_eq!(
        class(&record)["sessions"]["failed"]["login_refused"],
        1,
        "{record}"
    );
}

#[test]
fn a_server_that_is_not_ftp_is_named_in_one_line() {
    // A server that greets in another protocol (HTTP's answer to nothing).
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().take(4).flatten() {
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    let out = run("RR1(1B/1000B)", 3, &format!("ftp://127.0.0.1:{port}/"), &[]);
    assert_eq!(out.status.code(), Some(3));
    let record = json_of(&out);
    let reason = record["incomplete_reason"].as_str().unwrap();
    assert!(
        reason.contains("the server sent 'HTTP/1.1 400 Bad Request', not an FTP reply"),
        "{reason}"
    );
}

#[test]
fn protocol_ftp_needs_an_ftp_target() {
    let out = stackbench()
        .args(["run", "STR3(1B/20MB)", "--protocol", "ftp"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("add --target ftp://HOST:PORT/DIR/"),
        "{stderr}"
    );
    let out = stackbench()
        .args([
            "run",
            "STR3(1B/20MB)",
            "--protocol",
            "ftp",
            "--transport",
            "unix",
        ])
        .args(["--target", "ftp://127.0.0.1:21/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A minimal FTP server in this process, one thread per session: the
/// log-on, EPSV (refused with 500 when `epsv` is false, for PASV), RETR of
/// a file as long as its name's last number, STOR counted to the end, and
/// QUIT. With `together`, a RETR's 150 and 226 go out in one write after
/// the data connection closed, and the greeting in two pieces: the codec
/// must find each reply wherever it falls.
fn fake_ftp(epsv: bool, together: bool) -> u16 {
    use std::io::{BufRead, BufReader};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for control in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut out = control.try_clone().unwrap();
                let mut lines = BufReader::new(control);
                if together {
                    out.write_all(b"22").unwrap();
                    std::thread::sleep(Duration::from_millis(2));
                }
                out.write_all(if together {
                    b"0-fake\r\n220 ready\r\n"
                } else {
                    b"220 fake\r\n"
                })
                .unwrap();
                let mut passive: Option<TcpListener> = None;
                let mut line = String::new();
                while lines.read_line(&mut line).unwrap_or(0) > 0 {
                    let (verb, arg) = line
                        .trim_end()
                        .split_once(' ')
                        .unwrap_or((line.trim_end(), ""));
                    let size =
                        |arg: &str| arg.rsplit('/').next().unwrap().parse::<usize>().unwrap();
                    let reply: Vec<u8> = match verb {
                        "USER" => b"331 password\r\n".to_vec(),
                        "PASS" => b"230 in\r\n".to_vec(),
                        "TYPE" => b"200 binary\r\n".to_vec(),
                        "EPSV" if !epsv => b"500 no EPSV\r\n".to_vec(),
                        "EPSV" | "PASV" => {
                            let l = TcpListener::bind("127.0.0.1:0").unwrap();
                            let p = l.local_addr().unwrap().port();
                            passive = Some(l);
                            if verb == "EPSV" {
                                format!("229 Extended Passive Mode (|||{p}|)\r\n").into_bytes()
                            } else {
                                format!("227 Passive Mode (127,0,0,1,{},{})\r\n", p / 256, p % 256)
                                    .into_bytes()
                            }
                        }
                        "RETR" => {
                            let (mut data, _) = passive.take().unwrap().accept().unwrap();
                            if !together {
                                out.write_all(b"150 sending\r\n").unwrap();
                            }
                            data.write_all(&vec![7u8; size(arg)]).unwrap();
                            drop(data);
                            if together {
                                b"150 sending\r\n226 done\r\n".to_vec()
                            } else {
                                b"226 done\r\n".to_vec()
                            }
                        }
                        "STOR" => {
                            let (mut data, _) = passive.take().unwrap().accept().unwrap();
                            out.write_all(b"150 send it\r\n").unwrap();
                            let mut got = Vec::new();
                            data.read_to_end(&mut got).unwrap();
                            if got.len() == size(arg) {
                                b"226 stored\r\n".to_vec()
                            } else {
                                b"451 short\r\n".to_vec()
                            }
                        }
                        "QUIT" => {
                            let _ = out.write_all(b"221 bye\r\n");
                            return;
                        }
                        _ => b"502 not here\r\n".to_vec(),
                    };
                    if out.write_all(&reply).is_err() {
                        return;
                    }
                    line.clear();
                }
            });
        }
    });
    port
}

/// The data connection end to end against an FTP server in this process
/// (no tier): RETR and STOR over EPSV, PASV where EPSV is refused, replies
/// split and joined, CRR's log-on and log-off; and the bytes: the file's on
/// the data connection plus the control connection's commands and replies,
/// exactly (an RR or STR client logs on before the window).
#[test]
fn transfers_count_the_file_and_the_control_bytes_exactly() {
    let epsv_joined = fake_ftp(true, true);
    let pasv_only = fake_ftp(false, false);
    let n = 30u64;
    let file = 100_000u64;
    // RETR over EPSV, 150 and 226 in one write after the data.
    let record = run_json(
        "STR1(1B/100000B)",
        n,
        &[
            "--protocol",
            "ftp",
            "--target",
            &format!("ftp://127.0.0.1:{epsv_joined}/"),
        ],
    );
    let c = class(&record);
    assert_eq!(
        (c["transactions"].as_u64(), c["errors"].as_u64()),
        (Some(n), Some(0)),
        "{c}"
    );
    let port_digits = epsv_joined.to_string().len() as u64;
    let replies = "229 Extended Passive Mode (|||".len() as u64
        + port_digits
        + "|)\r\n".len() as u64
        + "150 sending\r\n226 done\r\n".len() as u64;
    assert_eq!(c["rx_bytes"].as_u64().unwrap(), n * (file + replies), "{c}");
    let commands = ("EPSV\r\n".len() + "RETR 100000\r\n".len()) as u64;
    assert_eq!(c["tx_bytes"].as_u64().unwrap(), n * commands, "{c}");
    // STOR after EPSV is refused: PASV, every transfer.
    let record = run_json(
        "RR1(100000B/1B)",
        n,
        &[
            "--protocol",
            "ftp",
            "--target",
            &format!("ftp://127.0.0.1:{pasv_only}/in/"),
        ],
    );
    let c = class(&record);
    assert_eq!(
        (c["transactions"].as_u64(), c["errors"].as_u64()),
        (Some(n), Some(0)),
        "{c}"
    );
    let tx = c["tx_bytes"].as_u64().unwrap();
    // The first transfer also sent the refused EPSV.
    let commands = ("PASV\r\n".len() + "STOR /in/100000\r\n".len()) as u64;
    assert_eq!(tx, n * (file + commands) + "EPSV\r\n".len() as u64, "{c}");
    // CRR: log on, transfer, log off, every transaction.
    let record = run_json(
        "CRR1(64B/1000B)",
        n,
        &[
            "--protocol",
            "ftp",
            "--target",
            &format!("ftp://127.0.0.1:{epsv_joined}/"),
        ],
    );
    let c = class(&record);
    assert_eq!(
        (c["transactions"].as_u64(), c["errors"].as_u64()),
        (Some(n), Some(0)),
        "{c}"
    );
    assert_eq!(c["sessions"]["attempted"].as_u64(), Some(n), "{c}");
    let logon =
        ("USER anonymous\r\n".len() + "PASS stackbench@\r\n".len() + "TYPE I\r\n".len()) as u64;
    let commands = ("EPSV\r\n".len() + "RETR 1000\r\n".len() + "QUIT\r\n".len()) as u64;
    assert_eq!(
        c["tx_bytes"].as_u64().unwrap(),
        n * (logon + commands),
        "{c}"
    );
}
