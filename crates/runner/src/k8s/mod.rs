//! A study run in a Kubernetes cluster, its agents and responders as pods
//! (docs/cluster.md): [`cluster`] checks what `stackbench k8s render` was
//! given — the study file through the study loader, the agent and responder
//! counts against every step's classes by the rule a run applies
//! ([`check_agents_fit`]), the names against the DNS label rules
//! ([`names`]) — and [`manifests`] builds the objects from the result. All
//! checks come first and nothing here writes, so bad input writes nothing;
//! the binary writes one file per object.
//!
//! JSON, not YAML: kubectl and the schema validator read it as they read
//! YAML, serde_json is already a dependency, and JSON has none of YAML's
//! implicit typing (a study name `no` or `1e3` needs no quoting rules). One
//! file per object, numbered in apply order: a diff or a review reads one
//! object at a time, one object can be deleted or re-applied alone (the
//! agents' Job after a failed run), and JSON has no multi-document stream.

pub mod manifests;
pub mod names;

use std::path::Path;

use stackbench_model::study::{parse_study, Study, StudyError};

use crate::error::{input, RunError};
use crate::resolve::check_agents_fit;
use manifests::Cluster;
use names::{check_label, check_subdomain, LabelRule, MAX_LABEL};

/// Clients one agent gets when the agent count is not given: 16K
/// connections stay well under the 20,000 file descriptors a process may
/// hold on hosts as tight as this project's CI (container runtimes often
/// allow more; see docs/cluster.md).
pub const CLIENTS_PER_AGENT: u64 = 16 * 1024;

/// The image `render` names by default: `stackbench:VERSION`, this build's
/// crate version, since agents and controller of different versions refuse
/// each other. The one place the tag is spelled: deploy/Containerfile's
/// image is built under it (the podman tier's test does so).
pub const DEFAULT_IMAGE: &str = concat!("stackbench:", env!("CARGO_PKG_VERSION"));

/// The most a ConfigMap may hold (the API server refuses larger ones).
const CONFIG_MAP_MAX_BYTES: usize = 1024 * 1024;

/// What `k8s render` was asked for, before any check; `None` is the default
/// each field's documentation names.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The study file (TOML).
    pub file: &'a Path,
    /// Agent pods [default: one per [`CLIENTS_PER_AGENT`] clients of the
    /// study's largest population].
    pub agents: Option<u32>,
    /// Responder pods [default: as many as agents].
    pub responders: Option<u32>,
    /// Container image with the stackbench binary.
    pub image: &'a str,
    /// Namespace of every object [default: none, kubectl's current one].
    pub namespace: Option<&'a str>,
    /// Prefix of every object's name [default: the study's name].
    pub name: Option<&'a str>,
    /// PersistentVolumeClaim for the controller's result database
    /// [default: an emptyDir].
    pub results_claim: Option<&'a str>,
}

/// Every check of the request, before anything is written: the cluster to
/// render, or the one-line refusal naming the input and the fix.
pub fn cluster(req: &Request<'_>) -> Result<Cluster, RunError> {
    let file = req.file.display().to_string();
    let (study, text) = read_study(req.file, &file).or_else(|e| input(e.to_string()))?;
    if text.len() > CONFIG_MAP_MAX_BYTES {
        return input(format!(
            "{file}: {} bytes: a ConfigMap holds at most 1 MiB: shorten the study file",
            text.len()
        ));
    }
    let steps = step_workloads(&study, &file).or_else(|e| input(e.to_string()))?;
    let largest = steps.iter().map(|w| w.total_clients()).max().unwrap_or(0);
    let agents = match req.agents {
        Some(0) => return input("--agents 0: give at least 1 agent"),
        Some(n) => n,
        None => largest.div_ceil(CLIENTS_PER_AGENT).max(1) as u32,
    };
    // One agent count serves every step, and the controller refuses a step
    // with a class smaller than it: refused here, before the cluster runs
    // the steps before it.
    for w in &steps {
        check_agents_fit(agents, std::slice::from_ref(w))
            .or_else(|e| input(format!("{file}: {e}")))?;
    }
    let responders = match req.responders {
        Some(0) => return input("--responders 0: give at least 1 responder"),
        Some(r) if r > agents => {
            return input(format!(
                "--responders {r} with {agents} agent(s): agent i drives responder i mod R, \
                 so responders beyond the agents' count would sit idle: give at most {agents}"
            ))
        }
        Some(r) => r,
        None => agents,
    };
    let name = checked_name(req.name, &study.name, agents)?;
    if let Some(ns) = req.namespace {
        check_label(ns, LabelRule::Rfc1123, MAX_LABEL)
            .or_else(|e| input(format!("--namespace {ns}: {e}")))?;
    }
    if req.image.trim().is_empty() || req.image.chars().any(char::is_whitespace) {
        return input(format!(
            "--image '{}': give an image reference without spaces, e.g. {DEFAULT_IMAGE}",
            req.image
        ));
    }
    if let Some(claim) = req.results_claim {
        check_subdomain(claim).or_else(|e| input(format!("--results-claim {claim}: {e}")))?;
    }
    Ok(Cluster {
        name,
        namespace: req.namespace.map(String::from),
        image: req.image.to_string(),
        agents,
        responders,
        study_text: text,
        study_name: study.name.clone(),
        results_claim: req.results_claim.map(String::from),
        token: stackbench_engine::token::Token::generate(),
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

/// The workload of every step of the study (every workload at every sweep
/// point, in every variant), once each.
fn step_workloads(
    study: &Study,
    file: &str,
) -> Result<Vec<stackbench_model::Workload>, StudyError> {
    let one = Study {
        repetitions: 1,
        ..study.clone()
    }
    .plan(&[], file)?;
    Ok(one.into_iter().map(|s| s.workload).collect())
}

/// `--name`, else the study's name: an RFC 1035 label (the Services are
/// named after it) short enough for the longest name derived from it — the
/// controller's, or agent pod hostnames `NAME-agents-INDEX`.
fn checked_name(given: Option<&str>, study: &str, agents: u32) -> Result<String, RunError> {
    let last_index = (agents - 1).to_string();
    let suffix = "-controller".len().max("-agents-".len() + last_index.len());
    let max_len = MAX_LABEL - suffix;
    match given {
        Some(name) => {
            check_label(name, LabelRule::Rfc1035, max_len).or_else(|e| {
                input(format!(
                    "--name {name}: {e}; the longest name made from it is {name}-controller \
                     or {name}-agents-{last_index}"
                ))
            })?;
            Ok(name.to_string())
        }
        None => {
            check_label(study, LabelRule::Rfc1035, max_len).or_else(|e| {
                input(format!(
                    "study name '{study}' is not a Kubernetes name prefix ({e}): give --name, e.g. --name stackbench"
                ))
            })?;
            Ok(study.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn study(dir: &Path, text: &str) -> std::path::PathBuf {
        let file = dir.join("s.toml");
        std::fs::write(&file, text).unwrap();
        file
    }

    fn request(file: &Path) -> Request<'_> {
        Request {
            file,
            agents: None,
            responders: None,
            image: "stackbench:test",
            namespace: None,
            name: None,
            results_claim: None,
        }
    }

    fn refusal(req: &Request<'_>) -> String {
        match cluster(req) {
            Err(RunError::Input(m)) => m,
            other => panic!("expected an input error, got {other:?}"),
        }
    }

    /// Without counts: one agent per 16K clients of the largest step, as
    /// many responders; the name is the study's.
    #[test]
    fn counts_default_from_the_largest_step() {
        let dir = tempfile::tempdir().unwrap();
        let file = study(
            dir.path(),
            "name = \"big\"\nworkloads = [\"RR(1B/1B)\"]\n[sweep]\nclients = [\"20K\", \"40K\"]\n",
        );
        let c = cluster(&request(&file)).unwrap();
        assert_eq!((c.agents, c.responders), (3, 3));
        assert_eq!(c.name, "big");
        assert_eq!(c.study_name, "big");
    }

    /// The controller refuses a step with a class smaller than the agent
    /// count; render refuses it by the same rule, naming the step's workload.
    #[test]
    fn agents_beyond_a_steps_smallest_class_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = study(
            dir.path(),
            "name = \"mix\"\nworkloads = [\"RR8(1B/1B)\", \"RR100(1B/1B)+RR3(1B/1B)\"]\n",
        );
        let req = |n| Request {
            agents: Some(n),
            ..request(&file)
        };
        assert_eq!(cluster(&req(3)).unwrap().agents, 3);
        let m = refusal(&req(4));
        assert!(
            m.ends_with(
                "s.toml: agents 4: RR100(1B/1B)+RR3(1B/1B) has a class of 3 clients and every \
                 agent runs a share of every class: use at most 3 agents"
            ),
            "{m}"
        );
    }

    #[test]
    fn names_and_counts_are_checked_before_anything_is_built() {
        let dir = tempfile::tempdir().unwrap();
        let file = study(dir.path(), "name = \"s\"\nworkloads = [\"RR8(1B/1B)\"]\n");
        let with = |f: &dyn Fn(&mut Request<'_>)| {
            let mut r = request(&file);
            f(&mut r);
            refusal(&r)
        };
        assert!(with(&|r| r.agents = Some(0)).contains("at least 1 agent"));
        assert!(with(&|r| {
            r.agents = Some(2);
            r.responders = Some(3)
        })
        .contains("give at most 2"));
        assert!(with(&|r| r.name = Some("9lives")).starts_with("--name 9lives: must start"));
        assert!(with(&|r| r.namespace = Some("A")).starts_with("--namespace A:"));
        assert!(with(&|r| r.image = "a b").starts_with("--image 'a b'"));
        assert!(with(&|r| r.results_claim = Some("x..y")).starts_with("--results-claim x..y"));
    }
}
