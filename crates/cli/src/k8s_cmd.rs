//! `stackbench k8s render STUDY.toml`: the Kubernetes manifests that run a
//! study with its agents and responders in a cluster (docs/cluster.md). The
//! checks and the objects are `stackbench_runner::k8s`'s; this module parses
//! the flags, writes one JSON file per object and prints their paths.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use stackbench_runner::k8s::{self, manifests::Object, Request};

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
    #[arg(long, default_value = stackbench_runner::k8s::DEFAULT_IMAGE)]
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
    let cluster = k8s::cluster(&Request {
        file: &args.file,
        agents: args.agents,
        responders: args.responders,
        image: &args.image,
        namespace: args.namespace.as_deref(),
        name: args.name.as_deref(),
        results_claim: args.results_claim.as_deref(),
    })?;
    let dir = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("k8s-{}", cluster.name)));
    let objects = k8s::manifests::objects(&cluster);
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
    // The manifests name an image the cluster must be able to pull.
    eprintln!(
        "first build and push image {image} where the cluster pulls from: \
         podman build -f deploy/Containerfile -t {image} DIR-WITH-THE-RELEASE-BINARY && \
         podman push {image} (docs/cluster.md, \"Build the image\")",
        image = args.image
    );
    Ok(crate::exit::OK)
}

/// Writes every object to `dir` (created when missing), each readable by
/// its owner only: the Secret's file holds the run token.
fn write_all(dir: &Path, objects: &[Object]) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for o in objects {
        let path = dir.join(&o.file);
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut f| f.write_all(o.text().as_bytes()))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
