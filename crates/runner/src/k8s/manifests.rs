//! The Kubernetes objects of one distributed study, built as JSON values
//! (kubectl reads JSON as it reads YAML): the study file in a ConfigMap,
//! responders as a Deployment behind a headless Service, the controller as a
//! Job behind a headless Service, the agents as one Indexed Job, and the
//! run token every connection between them proves in a Secret, which each
//! container reads into `STACKBENCH_TOKEN` (an environment, not an
//! argument: `ps` and the pod spec's command never show it). Pure:
//! [`objects`] maps a [`Cluster`] (checked by [`super::cluster`]) to the
//! objects and [`Object::text`] gives each one's file contents.
//!
//! Where this follows or departs from grafana/k6-operator
//! (pkg/resources/jobs/runner.go, starter.go):
//! - k6-operator creates one Job per runner, each with its segment baked into
//!   its command (`--execution-segment`); here one Indexed Job runs every
//!   agent and each takes its segment from `JOB_COMPLETION_INDEX` and
//!   `STACKBENCH_AGENTS`, so N is one number in one object.
//! - k6-operator starts runners `--paused` and a starter Job curls each
//!   runner's REST API in turn to resume it, behind a Service per runner
//!   (the start skew grows with N). Here agents dial out to the controller,
//!   which arms them all and gives one `start_at`: no Service per agent, no
//!   starter, and no pod needs the API server (no service-account token is
//!   mounted).
//! - As k6-operator's runners: `restartPolicy: Never` and no retries, so a
//!   failed runner is never replaced mid-test. Its `separate` option is a
//!   *required* anti-affinity; here the spread is *preferred*, so a one-node
//!   cluster (kind, minikube) still schedules the study.
//!
//! cloud-bulldozer/k8s-netperf runs client and server as Deployments and
//! drives them with `kubectl exec` (which needs pods/exec rights), reading
//! results from the exec output and averaging P99 across processes. Here the
//! controller is a Job that merges the agents' histograms itself, and results
//! leave the cluster through the controller's log and its results volume.

use serde_json::{json, Value};
use stackbench_engine::token::{Token, TOKEN_ENV};

/// The Secret's key that holds the token.
pub const TOKEN_KEY: &str = "token";

/// Port the controller listens on for agents (`--agent-listen`).
pub const CONTROLLER_PORT: u16 = 7700;
/// Control port of every responder (`stackbench serve --listen`).
pub const RESPONDER_PORT: u16 = 7701;
/// Where the controller container finds the study file (from the ConfigMap).
pub const STUDY_DIR: &str = "/etc/stackbench";
pub const STUDY_KEY: &str = "study.toml";
/// Where the controller keeps its result database (the results volume).
pub const RESULTS_DIR: &str = "/results";
/// The line before the controller's JSON export in its log.
pub const RESULTS_MARKER: &str = "--- stackbench results (JSON) ---";
/// How long an init container waits for what its pod needs (the
/// responders' or the controller's address) before the pod fails.
pub const WAIT_S: u32 = 600;
/// The user the image runs as (deploy/Containerfile), so the results
/// volume is made writable for it.
pub const RUN_AS: u32 = 65532;

/// What to render: the checked input of `stackbench k8s render`.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Prefix of every object's name (an RFC 1035 label, short enough for
    /// every suffix).
    pub name: String,
    /// `None`: the objects carry no namespace (kubectl's current one).
    pub namespace: Option<String>,
    pub image: String,
    pub agents: u32,
    pub responders: u32,
    /// The study file's text, as read.
    pub study_text: String,
    /// The study's name: the `study` label of every run it stores.
    pub study_name: String,
    /// A PersistentVolumeClaim for the result database; `None`: an emptyDir
    /// (the database lives as long as the controller pod).
    pub results_claim: Option<String>,
    /// The study's run token (random per rendering), held by the Secret.
    pub token: Token,
}

/// One object and the file it is written to.
pub struct Object {
    pub file: String,
    pub value: Value,
}

impl Object {
    /// The file's contents: the object as indented JSON, `apiVersion`,
    /// `kind` and `metadata` first, as people write them (serde_json's map
    /// keeps its keys sorted; inside each part they stay sorted).
    pub fn text(&self) -> String {
        let mut rest = self.value.as_object().cloned().unwrap_or_default();
        for key in ["apiVersion", "kind", "metadata"] {
            rest.remove(key);
        }
        let ordered = Ordered {
            api_version: &self.value["apiVersion"],
            kind: &self.value["kind"],
            metadata: &self.value["metadata"],
            rest,
        };
        // A map of JSON values always serializes.
        serde_json::to_string_pretty(&ordered).unwrap_or_default() + "\n"
    }
}

#[derive(serde::Serialize)]
struct Ordered<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a Value,
    kind: &'a Value,
    metadata: &'a Value,
    #[serde(flatten)]
    rest: serde_json::Map<String, Value>,
}

impl Cluster {
    pub fn study_map(&self) -> String {
        format!("{}-study", self.name)
    }
    pub fn responder(&self) -> String {
        format!("{}-responder", self.name)
    }
    pub fn controller(&self) -> String {
        format!("{}-controller", self.name)
    }
    pub fn agents_job(&self) -> String {
        format!("{}-agents", self.name)
    }
    pub fn token_secret(&self) -> String {
        format!("{}-token", self.name)
    }

    /// The container environment entry that reads the token from the Secret.
    fn token_env(&self) -> Value {
        json!({
            "name": TOKEN_ENV,
            "valueFrom": { "secretKeyRef": { "name": self.token_secret(), "key": TOKEN_KEY } },
        })
    }

    /// The controller's command line (the study it runs), as the container
    /// runs it.
    pub fn controller_argv(&self) -> Vec<String> {
        [
            "stackbench",
            "study",
            &format!("{STUDY_DIR}/{STUDY_KEY}"),
            "--agents",
            &self.agents.to_string(),
            "--launcher",
            "external",
            "--agent-listen",
            &format!("0.0.0.0:{CONTROLLER_PORT}"),
            "--target",
            &format!("{}:{RESPONDER_PORT}", self.responder()),
            "--db",
            &format!("{RESULTS_DIR}/results.db"),
        ]
        .map(String::from)
        .to_vec()
    }

    /// An agent's command line; its segment comes from the environment.
    pub fn agent_argv(&self) -> Vec<String> {
        [
            "stackbench",
            "agent",
            "--controller",
            &format!("{}:{CONTROLLER_PORT}", self.controller()),
        ]
        .map(String::from)
        .to_vec()
    }

    /// A responder's command line.
    pub fn responder_argv(&self) -> Vec<String> {
        ["stackbench", "serve", "--listen"]
            .map(String::from)
            .into_iter()
            .chain([format!("0.0.0.0:{RESPONDER_PORT}")])
            .collect()
    }

    fn labels(&self, component: &str) -> Value {
        json!({
            "app.kubernetes.io/name": "stackbench",
            "app.kubernetes.io/instance": self.name,
            "app.kubernetes.io/component": component,
        })
    }

    fn metadata(&self, name: String, component: &str) -> Value {
        let mut meta = json!({
            "name": name,
            "labels": self.labels(component),
        });
        if let Some(ns) = &self.namespace {
            meta["namespace"] = json!(ns);
        }
        meta
    }
}

/// Every object, in the order they are applied.
pub fn objects(c: &Cluster) -> Vec<Object> {
    let named = |kind: &str, value: Value| Object {
        file: format!(
            "{}-{}.json",
            kind,
            value["metadata"]["name"].as_str().unwrap_or_default()
        ),
        value,
    };
    vec![
        named("00-configmap", study_config_map(c)),
        named("01-secret", token_secret(c)),
        named("10-service", responder_service(c)),
        named("11-deployment", responder_deployment(c)),
        named("20-service", controller_service(c)),
        named("21-job", controller_job(c)),
        named("30-job", agents_job(c)),
    ]
}

/// The run token, which the responders, the controller and the agents prove
/// to each other: `stringData`, so the file shows what the cluster stores.
/// The rendered file holds the secret: it is written readable by its owner
/// only.
fn token_secret(c: &Cluster) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": c.metadata(c.token_secret(), "token"),
        "type": "Opaque",
        "stringData": { TOKEN_KEY: c.token.to_hex() },
    })
}

fn study_config_map(c: &Cluster) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": c.metadata(c.study_map(), "study"),
        "data": { STUDY_KEY: c.study_text },
    })
}

/// Headless: the responders' data ports are chosen per test (ephemeral), so
/// a ClusterIP Service, which forwards only the ports it lists, could not
/// carry the data connections; the headless Service's name resolves to every
/// ready responder pod's address, and agent i drives address i mod R.
fn responder_service(c: &Cluster) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": c.metadata(c.responder(), "responder"),
        "spec": {
            "clusterIP": "None",
            "selector": c.labels("responder"),
            "ports": [{ "name": "control", "port": RESPONDER_PORT, "protocol": "TCP" }],
        },
    })
}

/// A pod is ready once its stackbench listens on `port`, read from the
/// kernel's socket table rather than by connecting: a probe's connection
/// would be a control session (responder) or an agent (controller) that
/// says nothing and leaves.
fn listening_probe(port: u16) -> Value {
    let pattern = format!(":{port:04X} 0*:0000 0A");
    json!({
        "exec": { "command": ["/bin/sh", "-c",
            format!("grep -qs '{pattern}' /proc/net/tcp /proc/net/tcp6")] },
        "periodSeconds": 2,
    })
}

/// Spread the study's pods over the nodes where there are several, so
/// agents and responders do not share CPUs (that would blur each side's
/// CPU per transaction); preferred, so one node still schedules them.
fn spread(c: &Cluster) -> Value {
    json!({
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100,
                "podAffinityTerm": {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {
                        "matchLabels": { "app.kubernetes.io/instance": c.name },
                        "matchExpressions": [{
                            "key": "app.kubernetes.io/component",
                            "operator": "In",
                            "values": ["agent", "responder"],
                        }],
                    },
                },
            }],
        },
    })
}

/// Requests only. No CPU limit: a CFS quota throttles the process inside
/// its window and shows up as latency that is not the network's. No memory
/// limit: reaching one kills the process mid-run, an incomplete run; a
/// cluster whose LimitRange demands limits gets them added by hand.
fn resources(cpu: &str, memory: &str) -> Value {
    json!({ "requests": { "cpu": cpu, "memory": memory } })
}

/// The container settings every stackbench container shares.
fn container_security() -> Value {
    json!({
        "allowPrivilegeEscalation": false,
        "runAsNonRoot": true,
        "capabilities": { "drop": ["ALL"] },
    })
}

fn responder_deployment(c: &Cluster) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": c.metadata(c.responder(), "responder"),
        "spec": {
            "replicas": c.responders,
            "selector": { "matchLabels": c.labels("responder") },
            "template": {
                "metadata": { "labels": c.labels("responder") },
                "spec": {
                    "automountServiceAccountToken": false,
                    "enableServiceLinks": false,
                    "affinity": spread(c),
                    "containers": [{
                        "name": "responder",
                        "image": c.image,
                        "command": c.responder_argv(),
                        "env": [c.token_env()],
                        "ports": [{ "name": "control", "containerPort": RESPONDER_PORT }],
                        "readinessProbe": listening_probe(RESPONDER_PORT),
                        "resources": resources("1", "512Mi"),
                        "securityContext": container_security(),
                    }],
                },
            },
        },
    })
}

/// Headless too, so that the name resolves only once the controller listens
/// (its readiness probe): the agents' init container waits for that name.
fn controller_service(c: &Cluster) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": c.metadata(c.controller(), "controller"),
        "spec": {
            "clusterIP": "None",
            "selector": c.labels("controller"),
            "ports": [{ "name": "agents", "port": CONTROLLER_PORT, "protocol": "TCP" }],
        },
    })
}

/// An init container that waits, at most [`WAIT_S`] seconds, until `test`
/// (a shell condition) holds.
fn wait_for(c: &Cluster, name: &str, test: &str, what: &str) -> Value {
    let script = format!(
        "i=0; until {test}; do i=$((i+1)); if [ $i -ge {WAIT_S} ]; then \
         echo \"stackbench: {what} not there after {WAIT_S} s\" >&2; exit 1; fi; sleep 1; done"
    );
    json!({
        "name": name,
        "image": c.image,
        "command": ["/bin/sh", "-c", script],
        "securityContext": container_security(),
    })
}

/// The controller: runs the study, then prints the study's stored runs as
/// JSON after [`RESULTS_MARKER`] so `kubectl logs` carries the results out,
/// and exits with the study's status (3: a run was incomplete). No
/// retries: a second controller would start the study over while the
/// agents are gone. The study's name reaches the script through the
/// environment, which needs no shell quoting whatever the name holds.
fn controller_job(c: &Cluster) -> Value {
    let script = format!(
        "\"$@\"; status=$?; echo '{RESULTS_MARKER}'; \
         stackbench results export --db {RESULTS_DIR}/results.db --where \"study=$STUDY_NAME\" \
         --format json; exit $status"
    );
    let mut command = vec!["/bin/sh".to_string(), "-c".into(), script, "sh".into()];
    command.extend(c.controller_argv());
    let results = match &c.results_claim {
        Some(claim) => {
            json!({ "name": "results", "persistentVolumeClaim": { "claimName": claim } })
        }
        None => json!({ "name": "results", "emptyDir": {} }),
    };
    let responders = format!(
        "[ \"$(getent ahosts {} | grep -c STREAM)\" -ge {} ]",
        c.responder(),
        c.responders
    );
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": c.metadata(c.controller(), "controller"),
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": { "labels": c.labels("controller") },
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": false,
                    "enableServiceLinks": false,
                    "securityContext": { "fsGroup": RUN_AS },
                    "initContainers": [wait_for(
                        c,
                        "wait-for-responders",
                        &responders,
                        &format!("{} ready responder(s) of {}", c.responders, c.responder()),
                    )],
                    "containers": [{
                        "name": "controller",
                        "image": c.image,
                        "command": command,
                        "env": [
                            { "name": "STUDY_NAME", "value": c.study_name },
                            c.token_env(),
                        ],
                        "ports": [{ "name": "agents", "containerPort": CONTROLLER_PORT }],
                        "readinessProbe": listening_probe(CONTROLLER_PORT),
                        "resources": resources("100m", "256Mi"),
                        "securityContext": container_security(),
                        "volumeMounts": [
                            { "name": "study", "mountPath": STUDY_DIR, "readOnly": true },
                            { "name": "results", "mountPath": RESULTS_DIR },
                        ],
                    }],
                    "volumes": [
                        { "name": "study", "configMap": { "name": c.study_map() } },
                        results,
                    ],
                },
            },
        },
    })
}

/// The agents: one Indexed Job, agent i is completion index i.
///
/// `backoffLimitPerIndex: 0` rather than `backoffLimit: 0`. Both never
/// start a failed agent again — a replacement would dial in to a run it
/// was not armed for, with its segment's clients already counted missing.
/// But `backoffLimit: 0` fails the whole Job on the first failed pod, and
/// Kubernetes then terminates every other agent mid-window, losing their
/// results; per index, the other agents finish their window, the
/// controller marks the run incomplete and names the dead agent, and the
/// Job ends Failed once all have ended. An evicted or preempted agent pod
/// counts as failed as well, so it is not replaced either; no
/// podFailurePolicy is needed (its Ignore action is exactly the silent
/// replacement this avoids).
fn agents_job(c: &Cluster) -> Value {
    let controller = format!("getent hosts {} >/dev/null", c.controller());
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": c.metadata(c.agents_job(), "agent"),
        "spec": {
            "completionMode": "Indexed",
            "completions": c.agents,
            "parallelism": c.agents,
            "backoffLimitPerIndex": 0,
            "template": {
                "metadata": { "labels": c.labels("agent") },
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": false,
                    "enableServiceLinks": false,
                    "affinity": spread(c),
                    "initContainers": [wait_for(
                        c,
                        "wait-for-controller",
                        &controller,
                        &format!("controller {}", c.controller()),
                    )],
                    "containers": [{
                        "name": "agent",
                        "image": c.image,
                        "command": c.agent_argv(),
                        "env": [
                            { "name": "STACKBENCH_AGENTS", "value": c.agents.to_string() },
                            c.token_env(),
                        ],
                        "resources": resources("1", "512Mi"),
                        "securityContext": container_security(),
                    }],
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> Cluster {
        Cluster {
            name: "smoke".into(),
            namespace: Some("bench".into()),
            image: "stackbench:test".into(),
            agents: 3,
            responders: 2,
            study_text: "name = \"s\"\n".into(),
            study_name: "s".into(),
            results_claim: None,
            token: Token::generate(),
        }
    }

    /// Apply order in the file names; the counts where kubectl reads them.
    #[test]
    fn objects_come_in_apply_order_with_the_counts() {
        let objects = objects(&cluster());
        let files: Vec<&str> = objects.iter().map(|o| o.file.as_str()).collect();
        assert_eq!(
            files,
            [
                "00-configmap-smoke-study.json",
                "01-secret-smoke-token.json",
                "10-service-smoke-responder.json",
                "11-deployment-smoke-responder.json",
                "20-service-smoke-controller.json",
                "21-job-smoke-controller.json",
                "30-job-smoke-agents.json",
            ]
        );
        assert_eq!(objects[3].value["spec"]["replicas"], 2);
        assert_eq!(objects[6].value["spec"]["completions"], 3);
        assert!(objects
            .iter()
            .all(|o| o.value["metadata"]["namespace"] == "bench"));
    }

    /// The token reaches every container from the Secret, never on a
    /// command line.
    #[test]
    fn every_container_reads_the_token_from_the_secret() {
        let c = cluster();
        let objects = objects(&c);
        let secret = &objects[1].value;
        assert_eq!(secret["kind"], "Secret");
        assert_eq!(secret["stringData"][TOKEN_KEY], c.token.to_hex());
        for o in &objects[2..] {
            let text = o.text();
            let Some(pod) = o.value["spec"]["template"]["spec"].as_object() else {
                continue;
            };
            let container = &pod["containers"][0];
            let env = container["env"].as_array().unwrap();
            assert!(
                env.iter().any(|e| e["name"] == TOKEN_ENV
                    && e["valueFrom"]["secretKeyRef"]["name"] == "smoke-token"),
                "{text}"
            );
            assert!(!text.contains(&c.token.to_hex()), "{}: {text}", o.file);
        }
    }

    #[test]
    fn a_file_starts_with_api_version_kind_and_metadata() {
        let text = objects(&cluster())[0].text();
        let keys: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("  \""))
            .map(|l| l.trim().split('"').nth(1).unwrap())
            .collect();
        assert_eq!(keys, ["apiVersion", "kind", "metadata", "data"]);
        assert!(text.ends_with("}\n"));
    }
}
