//! `--metrics-listen`: a run's live figures scraped mid-run, twice, and
//! read with the reference OpenMetrics parser (the Prometheus project's
//! `prometheus_client.openmetrics.parser`, Debian's
//! python3-prometheus-client; the python tier): every family the exposition
//! promises is there, counters grow between the scrapes, and each latency
//! histogram is cumulative with its count equal to the transactions — alone
//! and with two agents, whose figures the controller adds up. An address
//! that cannot be bound is refused before anything runs.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use stackbench_metrics::openmetrics::{Kind, CONTENT_TYPE, FAMILIES};
use stackbench_testkit::{skip, Tier};

use crate::common::{refused, stackbench};

/// Parses an exposition with the reference parser and prints its families
/// as JSON: `{name: {"type": t, "samples": [[name, labels, value], …]}}`.
const PARSE: &str = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = {}
for f in text_string_to_metric_families(sys.stdin.read()):
    out[f.name] = {"type": f.type,
                   "samples": [[s.name, s.labels, s.value] for s in f.samples]}
print(json.dumps(out))
"#;

/// A python3 with the parser: `python3` on PATH, else Debian's own (a
/// python3 of pyenv or a venv does not see Debian's packages).
fn parser_python() -> Option<&'static str> {
    ["python3", "/usr/bin/python3"].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import prometheus_client.openmetrics.parser"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

type Families = BTreeMap<String, Value>;

fn parse(python: &str, text: &str) -> Families {
    let mut child = Command::new(python)
        .args(["-c", PARSE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the OpenMetrics parser refused the scrape: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `GET /metrics`: the body, after checking the status and content type.
fn scrape(addr: &str) -> String {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(c, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    c.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a response head");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(
        head.contains(&format!("Content-Type: {CONTENT_TYPE}")),
        "{head}"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    body.to_string()
}

/// The value of the one sample `name` with `labels` (a subset).
fn value(f: &Families, family: &str, sample: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<f64> = f[family]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s[0] == sample && labels.iter().all(|(k, v)| s[1][*k] == *v))
        .map(|s| s[2].as_f64().unwrap())
        .collect();
    assert_eq!(found.len(), 1, "{sample} {labels:?} in {}", f[family]);
    found[0]
}

/// A run with live metrics on a port of its own choosing; the address is
/// read from its note, and its stderr drained so that it never blocks.
struct Served {
    child: Child,
    addr: String,
    stderr: thread::JoinHandle<String>,
}

fn start(args: &[&str]) -> Served {
    let mut child = stackbench()
        .args([
            "run",
            "--metrics-listen",
            "127.0.0.1:0",
            "--json",
            "--no-store",
        ])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    let addr = loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("no metrics address on stderr: {seen}"))
            .unwrap();
        seen += &line;
        seen += "\n";
        if let Some(rest) = line.strip_prefix("stackbench: live metrics at http://") {
            break rest.trim_end_matches("/metrics").to_string();
        }
    };
    let stderr = thread::spawn(move || {
        lines
            .map_while(Result::ok)
            .fold(seen, |all, l| all + &l + "\n")
    });
    Served {
        child,
        addr,
        stderr,
    }
}

/// Scrapes until the window has run `after_s`, parsed.
fn scrape_in_window(python: &str, addr: &str, after_s: f64, classes: &[&str]) -> Families {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let f = parse(python, &scrape(addr));
        // The live figures trail the workers by up to about a second (see
        // docs/metrics.md): on a loaded machine the window can be past
        // `after_s` before its first transactions are copied out.
        let counted = |class: &&str| {
            f.get("stackbench_transactions")
                .and_then(|fam| fam["samples"].as_array())
                .is_some_and(|samples| {
                    samples.iter().any(|s| {
                        s[0] == "stackbench_transactions_total"
                            && s[1]["class"] == *class
                            && s[2].as_f64().is_some_and(|v| v > 0.0)
                    })
                })
        };
        if value(
            &f,
            "stackbench_window_elapsed_seconds",
            "stackbench_window_elapsed_seconds",
            &[],
        ) >= after_s
            && classes.iter().all(counted)
        {
            return f;
        }
        assert!(
            Instant::now() < deadline,
            "the window never reached {after_s} s"
        );
        thread::sleep(Duration::from_millis(200));
    }
}

/// Checks one scrape's families and each class's histogram; returns the
/// transactions per class.
fn check_scrape(f: &Families, classes: &[&str], clients: f64) -> Vec<f64> {
    for fam in FAMILIES {
        let kind = match fam.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let parsed = f
            .get(&fam.name())
            .unwrap_or_else(|| panic!("no family {}", fam.name()));
        assert_eq!(parsed["type"], kind, "{}", fam.name());
    }
    assert_eq!(f.len(), FAMILIES.len(), "families: {:?}", f.keys());
    assert_eq!(
        value(f, "stackbench_clients", "stackbench_clients", &[]),
        clients
    );
    assert_eq!(
        value(
            f,
            "stackbench_clients_connected",
            "stackbench_clients_connected",
            &[]
        ),
        clients
    );
    let mut transactions = Vec::new();
    for class in classes {
        let t = value(
            f,
            "stackbench_transactions",
            "stackbench_transactions_total",
            &[("class", class)],
        );
        let lat = "stackbench_latency_seconds";
        let count = value(
            f,
            lat,
            "stackbench_latency_seconds_count",
            &[("class", class)],
        );
        assert_eq!(count, t, "{class}: the histogram counts every transaction");
        let mut buckets: Vec<(f64, f64)> = f[lat]["samples"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s[0] == "stackbench_latency_seconds_bucket" && s[1]["class"] == *class)
            .map(|s| {
                let le = s[1]["le"].as_str().unwrap();
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                };
                (le, s[2].as_f64().unwrap())
            })
            .collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(buckets.len() > 60, "{class}: {} buckets", buckets.len());
        assert!(
            buckets.windows(2).all(|w| w[0].1 <= w[1].1),
            "{class}: not cumulative: {buckets:?}"
        );
        assert_eq!(buckets.last().unwrap(), &(f64::INFINITY, count));
        // Loopback latency lies between the first and the last finite edge.
        assert!(
            buckets[0].1 < count && buckets[buckets.len() - 2].1 == count,
            "{buckets:?}"
        );
        let errors = value(
            f,
            "stackbench_errors",
            "stackbench_errors_total",
            &[("class", class), ("kind", "reset")],
        );
        assert_eq!(errors, 0.0);
        transactions.push(t);
    }
    transactions
}

fn scraped_mid_run(python: &str, args: &[&str], classes: &[&str], clients: f64) {
    let mut run = start(args);
    let first = scrape_in_window(python, &run.addr, 1.0, classes);
    let t1 = check_scrape(&first, classes, clients);
    let second = scrape_in_window(python, &run.addr, 3.0, classes);
    let t2 = check_scrape(&second, classes, clients);
    for (i, class) in classes.iter().enumerate() {
        assert!(
            t1[i] > 0.0 && t2[i] > t1[i],
            "{class}: {} then {}",
            t1[i],
            t2[i]
        );
    }
    let cpu = |f: &Families, side| {
        value(
            f,
            "stackbench_cpu_seconds",
            "stackbench_cpu_seconds_total",
            &[("side", side)],
        )
    };
    assert!(cpu(&second, "client") > cpu(&first, "client"));
    assert!(cpu(&second, "server") >= cpu(&first, "server"));
    let payload = |f: &Families| {
        value(
            f,
            "stackbench_payload_bytes",
            "stackbench_payload_bytes_total",
            &[("class", classes[0]), ("direction", "sent")],
        )
    };
    assert!(payload(&second) > payload(&first));
    let status = run.child.wait().unwrap();
    let stderr = run.stderr.join().unwrap();
    assert!(status.success(), "{stderr}");
    // The listener goes with the run.
    assert!(
        TcpStream::connect(&run.addr).is_err(),
        "still listening after the run"
    );
}

#[test]
fn live_metrics_are_scraped_mid_run_and_parse_as_openmetrics() {
    let Some(python) = parser_python() else {
        let why = "no python3 with prometheus_client.openmetrics; apt-get install python3-prometheus-client";
        return skip(Tier::Python, "live metrics scraped mid-run", why);
    };
    let mix = ["RR2(1B/1B)", "CRR1(1B/1B)"];
    let window = ["--warmup", "1s", "--duration", "6s"];
    scraped_mid_run(
        python,
        &[&["RR2(1B/1B)+CRR1(1B/1B)"][..], &window].concat(),
        &mix,
        3.0,
    );
    // Two agents: the controller serves their figures added up.
    let agents = [&["RR4(1B/1B)", "--agents", "2"][..], &window].concat();
    scraped_mid_run(python, &agents, &["RR4(1B/1B)"], 4.0);
}

#[test]
fn an_address_that_cannot_be_bound_is_refused_before_the_run() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    refused(
        "run",
        &["RR1(1B/1B)", "--metrics-listen", &addr],
        &format!("metrics_listen {addr}: "),
    );
    refused(
        "run",
        &["RR1(1B/1B)", "--metrics-listen", "no-such-host:9464"],
        "give a free address of this host, e.g. 127.0.0.1:9464",
    );
}
