//! The agents of a run spread over several driver processes: how many, how
//! they were started, how far apart their windows opened, and each agent's
//! own view of its segment (`RunRecord::agents`). The run's classes hold
//! the merged figures; these rows keep what each agent measured, so an
//! engineer can see which agent (or host) was slow, late or lost.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::LatencyUs;

/// The agents of one run (absent for a run driven by one process).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct AgentsSummary {
    /// Agents the run was split among (the segments' count N).
    pub count: u32,
    /// How the agents were started: `local`, `slurm` or `external`.
    pub launcher: String,
    /// Responder processes (or addresses of a given target) the agents
    /// drove: one per agent when the run started them.
    #[serde(default)]
    pub responders: u32,
    /// Latest minus earliest window start of the agents whose window opened,
    /// seconds on the controller's clock (each agent's start corrected by its
    /// measured clock offset); `None` when no agent's window opened.
    pub start_skew_s: Option<f64>,
    /// What the merge of the agents' figures could not do exactly, one
    /// sentence each (a figure it then left out rather than estimate: an
    /// agent that sent no latency histogram, percentiles only a histogram
    /// can merge). Empty when every figure merged exactly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merge_notes: Vec<String>,
    /// One row per agent, by segment index.
    pub agents: Vec<AgentRecord>,
}

/// One agent: where it ran, its clock against the controller's, and what
/// its segment measured.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct AgentRecord {
    /// Its segment's index i (agents are numbered from 0).
    pub index: u32,
    /// The segments' count N: this agent ran segment i of N.
    pub count: u32,
    /// Host name the agent ran on (as it reported it).
    pub host: String,
    /// Its process id on that host.
    pub pid: u32,
    /// The responder target it drove (`HOST:PORT`).
    pub responder: String,
    /// Agent clock minus controller clock, seconds, as the controller
    /// estimated it over the control connection the way NTP does (±
    /// `clock_rtt_s` / 2); 0 for an agent on the controller's host.
    pub clock_offset_s: f64,
    /// Round trip of the exchange that gave `clock_offset_s`, seconds.
    pub clock_rtt_s: f64,
    /// When its measurement window opened, seconds since the Unix epoch on
    /// the controller's clock; `None` when its window never opened.
    pub window_start_s: Option<f64>,
    /// False when the agent ended early or stopped reporting.
    pub complete: bool,
    /// Why the agent is incomplete, in its own words; `None` when complete.
    pub incomplete_reason: Option<String>,
    /// Its segment of each class, in the run's class order (empty when it
    /// reported nothing).
    pub classes: Vec<AgentClassRow>,
}

/// One class as one agent measured its segment.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct AgentClassRow {
    /// The class in canonical notation, as the run's class.
    pub notation: String,
    /// Clients of the class this agent ran (its segment's share).
    pub clients: u32,
    /// Transactions its clients completed inside its window.
    pub transactions: u64,
    /// `transactions / duration_s`.
    pub rate_tps: f64,
    /// Errors of its single connections, all causes.
    pub errors: u64,
    /// Length of its measurement window, seconds.
    pub duration_s: f64,
    /// Its transactions' latency, µs; `None` without a transaction.
    pub latency_us: Option<LatencyUs>,
    /// Driver CPU per transaction of this agent's own view (its host's CPU
    /// set, which agents on one host share), µs; `None` when not measured.
    pub client_cpu_us_per_tran: Option<f64>,
    /// Responder CPU per transaction as its responder reported it to this
    /// agent, µs; `None` when not measured.
    pub server_cpu_us_per_tran: Option<f64>,
    /// Busy share of the driver CPUs in this agent's view, percent.
    pub client_util_pct: Option<f64>,
    /// Busy share of the responder CPUs in this agent's view, percent.
    pub server_util_pct: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::tests::sample_class;
    use crate::{record_from_json, RunRecord, SCHEMA_VERSION};

    fn run(agents: Option<AgentsSummary>) -> RunRecord {
        RunRecord {
            schema_version: SCHEMA_VERSION,
            stackbench_version: "0.1.0".into(),
            complete: true,
            incomplete_reason: None,
            started_unix_s: 1.0,
            settings: Default::default(),
            responder: "remote".into(),
            classes: vec![sample_class()],
            warnings: vec![],
            mix_cpu: vec![],
            agents,
            refused_peers: None,
            lab: None,
            environment: None,
            server_process: None,
            responder_application: None,
        }
    }

    /// A record with agents reads back whole; one without them (every
    /// record before agents existed) has no `agents` key and reads as `None`.
    #[test]
    fn agents_round_trip_and_are_absent_for_one_process() {
        let with = run(Some(AgentsSummary {
            count: 2,
            launcher: "local".into(),
            responders: 2,
            start_skew_s: Some(0.0004),
            merge_notes: vec![],
            agents: vec![AgentRecord {
                index: 1,
                count: 2,
                host: "node2".into(),
                window_start_s: Some(1.5),
                complete: true,
                classes: vec![AgentClassRow {
                    notation: "RR1(1B/1B)".into(),
                    clients: 1,
                    ..AgentClassRow::default()
                }],
                ..AgentRecord::default()
            }],
        }));
        let json = serde_json::to_value(&with).unwrap();
        assert_eq!(json["agents"]["agents"][0]["host"], "node2");
        assert!(json["agents"].get("merge_notes").is_none());
        assert_eq!(record_from_json(json).unwrap(), with);
        let without = serde_json::to_value(run(None)).unwrap();
        assert!(without.get("agents").is_none());
        assert_eq!(record_from_json(without).unwrap().agents, None);
    }
}
