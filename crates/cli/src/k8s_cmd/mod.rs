//! `stackbench k8s render STUDY.toml`: the Kubernetes manifests that run a
//! study with its agents and responders in a cluster (docs/cluster.md). This
//! module checks the input — the study file through the study loader, the
//! agent and responder counts against the study's populations, the names
//! against the DNS label rules — and writes one JSON file per object, all
//! checks first, so bad input writes nothing; [`manifests`] builds the
//! objects.
//!
//! JSON, not YAML: kubectl and the schema validator read it as they read
//! YAML, serde_json is already a dependency, and JSON has none of YAML's
//! implicit typing (a study name `no` or `1e3` needs no quoting rules). One
//! file per object, numbered in apply order: a diff or a review reads one
//! object at a time, one object can be deleted or re-applied alone (the
//! agents' Job after a failed run), and JSON has no multi-document stream.

mod manifests;
mod names;

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use stackbench_results::study::{parse_study, Study, StudyError};

use crate::exit::usage;
use manifests::{Cluster, Object};
use names::{check_label, check_subdomain, LabelRule, MAX_LABEL};

/// Clients one agent gets when `--agents` is not given: 16K connections
/// stay well under the 20,000 file descriptors a process may hold on hosts
/// as tight as this project's CI (container runtimes often allow more; see
/// docs/cluster.md).
pub const CLIENTS_PER_AGENT: u64 = 16 * 1024;

/// The most a ConfigMap may hold (the API server refuses larger ones).
const CONFIG_MAP_MAX_BYTES: usize = 1024 * 1024;

#[derive(Debug, Args)]
pub struct K8sArgs {
    #[command(subcommand)]
    action: K8sAction,
}

#[derive(Debug, Subcommand)]
enum K8sAction {
    /// Write the manifests that run a study in a cluster: the study in a
    /// ConfigMap, responders (Deployment and headless Service), the
    /// controller (Job and Service) and the agents (one Indexed Job).
    #[command(after_help = "Examples:
  stackbench k8s render examples/tn3270-capacity.toml --agents 16 --image registry.example/stackbench:0.1.0
  kubectl apply -f k8s-tn3270-capacity/
  kubectl logs -f job/tn3270-capacity-controller")]
    Render(RenderArgs),
}

#[derive(Debug, Args)]
struct RenderArgs {
    /// The study file (TOML); see docs/results.md for its keys.
    file: PathBuf,
    /// Agent pods (the Indexed Job's completions and parallelism)
    /// [default: one per 16K clients of the study's largest population].
    #[arg(long, value_name = "N")]
    agents: Option<u32>,
    /// Responder pods (the Deployment's replicas); agent i drives responder
    /// i mod R [default: as many as agents].
    #[arg(long, value_name = "R")]
    responders: Option<u32>,
    /// Container image with the stackbench binary (deploy/Containerfile);
    /// it must be this stackbench's version, since agents and controller of
    /// different versions refuse each other.
    #[arg(long, default_value = concat!("stackbench:", env!("CARGO_PKG_VERSION")))]
    image: String,
    /// Namespace of every object [default: none written, kubectl's current one].
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,
    /// Prefix of every object's name [default: the study's name].
    #[arg(long)]
    name: Option<String>,
    /// Keep the controller's result database on this PersistentVolumeClaim
    /// instead of an emptyDir that goes with the pod.
    #[arg(long, value_name = "CLAIM")]
    results_claim: Option<String>,
    /// Directory to write the manifests to [default: k8s-NAME].
    #[arg(long, short, value_name = "DIR")]
    output: Option<PathBuf>,
}

pub fn run(args: K8sArgs) -> anyhow::Result<i32> {
    match args.action {
        K8sAction::Render(args) => render(args),
    }
}

fn render(args: RenderArgs) -> anyhow::Result<i32> {
    let cluster = checked(&args)?;
    let dir = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("k8s-{}", cluster.name)));
    let objects = manifests::objects(&cluster);
    write_all(&dir, &objects)?;
    for o in &objects {
        println!("{}", dir.join(&o.file).display());
    }
    eprintln!(
        "{} agent(s), {} responder(s); apply with: kubectl apply -f {}/",
        cluster.agents,
        cluster.responders,
        dir.display()
    );
    Ok(crate::exit::OK)
}

/// Every check of the input, before anything is written.
fn checked(args: &RenderArgs) -> anyhow::Result<Cluster> {
    let file = args.file.display().to_string();
    let (study, text) = read_study(&args.file, &file).or_else(|e| usage(e.to_string()))?;
    if text.len() > CONFIG_MAP_MAX_BYTES {
        return usage(format!(
            "{file}: {} bytes: a ConfigMap holds at most 1 MiB: shorten the study file",
            text.len()
        ));
    }
    let (smallest, largest) = populations(&study, &file).or_else(|e| usage(e.to_string()))?;
    let agents = match args.agents {
        Some(0) => return usage("--agents 0: give at least 1 agent"),
        Some(n) if u64::from(n) > largest => {
            return usage(format!(
            "--agents {n}: more agents than the study's largest population ({largest} clients): \
                 give at most {largest}"
        ))
        }
        Some(n) => n,
        None => largest.div_ceil(CLIENTS_PER_AGENT).max(1) as u32,
    };
    if u64::from(agents) > smallest {
        eprintln!(
            "note: {agents} agents but the study's smallest population is {smallest} clients: \
             in those steps some agents run no client"
        );
    }
    let responders = match args.responders {
        Some(0) => return usage("--responders 0: give at least 1 responder"),
        Some(r) if r > agents => {
            return usage(format!(
                "--responders {r} with {agents} agent(s): agent i drives responder i mod R, \
                 so responders beyond the agents' count would sit idle: give at most {agents}"
            ))
        }
        Some(r) => r,
        None => agents,
    };
    let name = checked_name(args.name.as_deref(), &study.name, agents)?;
    if let Some(ns) = &args.namespace {
        check_label(ns, LabelRule::Rfc1123, MAX_LABEL)
            .or_else(|e| usage(format!("--namespace {ns}: {e}")))?;
    }
    if args.image.trim().is_empty() || args.image.chars().any(char::is_whitespace) {
        return usage(format!(
            "--image '{}': give an image reference without spaces, e.g. stackbench:{}",
            args.image,
            env!("CARGO_PKG_VERSION")
        ));
    }
    if let Some(claim) = &args.results_claim {
        check_subdomain(claim).or_else(|e| usage(format!("--results-claim {claim}: {e}")))?;
    }
    Ok(Cluster {
        name,
        namespace: args.namespace.clone(),
        image: args.image.clone(),
        agents,
        responders,
        study_text: text,
        study_name: study.name.clone(),
        results_claim: args.results_claim.clone(),
    })
}

/// The study file's text and the study, with the study loader's errors.
fn read_study(path: &Path, file: &str) -> Result<(Study, String), StudyError> {
    let text = std::fs::read_to_string(path).map_err(|source| StudyError::Read {
        file: file.to_string(),
        source,
    })?;
    Ok((parse_study(&text, file)?, text))
}

/// The smallest and largest number of clients of any step of the study
/// (every workload at every sweep point, in every variant).
fn populations(study: &Study, file: &str) -> Result<(u64, u64), StudyError> {
    let one = Study {
        repetitions: 1,
        ..study.clone()
    }
    .plan(&[], file)?;
    let sizes = one.iter().map(|s| s.workload.total_clients());
    let smallest = sizes.clone().min().unwrap_or(0);
    let largest = sizes.max().unwrap_or(0);
    Ok((smallest, largest))
}

/// `--name`, else the study's name: an RFC 1035 label (the Services are
/// named after it) short enough for the longest name derived from it — the
/// controller's, or agent pod hostnames `NAME-agents-INDEX`.
fn checked_name(given: Option<&str>, study: &str, agents: u32) -> anyhow::Result<String> {
    let last_index = (agents - 1).to_string();
    let suffix = "-controller".len().max("-agents-".len() + last_index.len());
    let max_len = MAX_LABEL - suffix;
    match given {
        Some(name) => {
            check_label(name, LabelRule::Rfc1035, max_len).or_else(|e| {
                usage(format!(
                    "--name {name}: {e}; the longest name made from it is {name}-controller \
                     or {name}-agents-{last_index}"
                ))
            })?;
            Ok(name.to_string())
        }
        None => {
            check_label(study, LabelRule::Rfc1035, max_len).or_else(|e| {
                usage(format!(
                    "study name '{study}' is not a Kubernetes name prefix ({e}): give --name, e.g. --name stackbench"
                ))
            })?;
            Ok(study.to_string())
        }
    }
}

/// An object with `apiVersion`, `kind` and `metadata` first, as people
/// write them (serde_json's map keeps its keys sorted; inside each part they
/// stay sorted).
#[derive(serde::Serialize)]
struct Ordered<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a serde_json::Value,
    kind: &'a serde_json::Value,
    metadata: &'a serde_json::Value,
    #[serde(flatten)]
    rest: serde_json::Map<String, serde_json::Value>,
}

fn ordered(value: &serde_json::Value) -> Ordered<'_> {
    let mut rest = value.as_object().cloned().unwrap_or_default();
    for key in ["apiVersion", "kind", "metadata"] {
        rest.remove(key);
    }
    Ordered {
        api_version: &value["apiVersion"],
        kind: &value["kind"],
        metadata: &value["metadata"],
        rest,
    }
}

/// Writes every object to `dir` (created when missing).
fn write_all(dir: &Path, objects: &[Object]) -> anyhow::Result<()> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for o in objects {
        let path = dir.join(&o.file);
        let text = serde_json::to_string_pretty(&ordered(&o.value))? + "\n";
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
