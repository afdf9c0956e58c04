//! docs/grafana/stackbench.json against the exposition it charts: the JSON
//! parses with the fields Grafana needs of a dashboard and its panels,
//! every panel and query takes its datasource from the `datasource`
//! variable, and every PromQL expression names only series that
//! `--metrics-listen` serves — the names taken from the code
//! ([`FAMILIES`]), labels included. (Loading it into a Grafana is not
//! possible here: no Grafana package in the registries this project
//! reaches.)

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
use stackbench_metrics::openmetrics::FAMILIES;

fn dashboard() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grafana/stackbench.json");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The identifiers of a PromQL expression (names of series, functions,
/// labels and keywords), outside string literals and `[…]` ranges.
fn identifiers(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut range) = (false, false);
    for c in expr.chars().chain([' ']) {
        match c {
            '"' if !range => quoted = !quoted,
            '[' if !quoted => range = true,
            ']' if !quoted => range = false,
            _ => {}
        }
        let in_word = !quoted && !range && (c.is_ascii_alphanumeric() || c == '_' || c == ':');
        if in_word && !(word.is_empty() && c.is_ascii_digit()) {
            word.push(c);
        } else if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
    }
    out
}

/// Labels the exposition puts on its series (`le` on histogram buckets).
const LABELS: &[&str] = &["class", "kind", "code", "side", "direction", "le"];
/// PromQL's functions, aggregations and keywords the dashboard may use
/// (`e6` is the exponent of `1e6`).
const PROMQL: &[&str] = &[
    "sum",
    "max",
    "min",
    "avg",
    "by",
    "without",
    "rate",
    "increase",
    "irate",
    "histogram_quantile",
    "scalar",
    "e6",
];

#[test]
fn every_expression_names_only_exposed_series() {
    let series: BTreeSet<String> = FAMILIES.iter().flat_map(|f| f.sample_names()).collect();
    let d = dashboard();
    let mut charted = BTreeSet::new();
    let mut exprs = 0;
    for panel in d["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            exprs += 1;
            let mut named = 0;
            for id in identifiers(expr) {
                if id.starts_with("stackbench_") {
                    assert!(
                        series.contains(&id),
                        "{expr}: {id} is not served (served: {series:?})"
                    );
                    charted.insert(id);
                    named += 1;
                } else {
                    assert!(
                        LABELS.contains(&id.as_str()) || PROMQL.contains(&id.as_str()),
                        "{expr}: {id} is neither a label of the exposition nor PromQL the test knows"
                    );
                }
            }
            assert!(named > 0, "{expr} names no stackbench series");
        }
    }
    assert!(exprs >= 10, "{exprs} expressions");
    // The figures the dashboard exists for.
    for must in [
        "stackbench_transactions_total",
        "stackbench_latency_seconds_bucket",
        "stackbench_cpu_seconds_total",
        "stackbench_errors_total",
        "stackbench_generator_lag_seconds_bucket",
    ] {
        assert!(charted.contains(must), "no panel charts {must}");
    }
    let exprs = d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap());
    assert!(
        exprs
            .filter_map(|t| t["expr"].as_str())
            .any(|e| e.starts_with("histogram_quantile(0.99, sum by (class, le) (rate(stackbench_latency_seconds_bucket")),
        "latency percentiles come from the histogram"
    );
}

#[test]
fn the_datasource_is_a_variable_everywhere() {
    let d = dashboard();
    let vars = d["templating"]["list"].as_array().unwrap();
    let ds = vars
        .iter()
        .find(|v| v["name"] == "datasource")
        .expect("a datasource variable");
    assert_eq!(ds["type"], "datasource");
    assert_eq!(ds["query"], "prometheus");
    let uses_variable = |v: &Value| v["uid"] == "${datasource}";
    for v in vars.iter().filter(|v| v["type"] == "query") {
        assert!(uses_variable(&v["datasource"]), "variable {}", v["name"]);
    }
    for panel in d["panels"].as_array().unwrap() {
        assert!(
            uses_variable(&panel["datasource"]),
            "panel {}",
            panel["title"]
        );
        for target in panel["targets"].as_array().unwrap() {
            assert!(
                uses_variable(&target["datasource"]),
                "panel {} target {}",
                panel["title"],
                target["refId"]
            );
        }
    }
}

#[test]
fn panels_have_what_grafana_needs() {
    let d = dashboard();
    assert!(d["title"].is_string() && d["uid"].is_string());
    assert!(d["schemaVersion"].as_u64().is_some_and(|v| v >= 36));
    let mut ids = BTreeSet::new();
    for panel in d["panels"].as_array().unwrap() {
        let title = &panel["title"];
        assert!(
            ids.insert(panel["id"].as_u64().expect("a numeric id")),
            "id of {title} repeats"
        );
        assert!(
            ["timeseries", "stat"].contains(&panel["type"].as_str().unwrap()),
            "{title}"
        );
        let pos = &panel["gridPos"];
        for k in ["h", "w", "x", "y"] {
            assert!(pos[k].is_u64(), "{title}: gridPos.{k}");
        }
        assert!(
            pos["x"].as_u64().unwrap() + pos["w"].as_u64().unwrap() <= 24,
            "{title} overflows the grid"
        );
        assert!(
            panel["fieldConfig"]["defaults"]["unit"].is_string(),
            "{title}: a unit"
        );
        let targets = panel["targets"].as_array().unwrap();
        let refs: BTreeSet<&str> = targets
            .iter()
            .map(|t| t["refId"].as_str().unwrap())
            .collect();
        assert_eq!(refs.len(), targets.len(), "{title}: refIds repeat");
    }
}

#[test]
fn the_identifier_scan_sees_through_strings_and_ranges() {
    let ids = identifiers(
        r#"sum by (class) (rate(stackbench_x_total{class=~"RR2(1B/1B)"}[$__rate_interval])) * 1e6"#,
    );
    assert_eq!(
        ids,
        [
            "sum",
            "by",
            "class",
            "rate",
            "stackbench_x_total",
            "class",
            "e6"
        ]
    );
}
