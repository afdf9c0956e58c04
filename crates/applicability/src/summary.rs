//! One window's stored form ([`Applicability`]) from what was observed:
//! the figures per subnet, the crypto census when the wire was captured,
//! and the settings that produced them. The projection is added by the
//! caller once its runs are done.

use stackbench_record::applicability::Applicability;

use crate::classify::{classify, figures, Selection};
use crate::mix::{mix, MixClass};
use crate::observe::{Observed, Watch};
use crate::protection::{census, Evidence};

/// The figures of `observed` under `sel`, and the mix to project;
/// `disallowed` suites (IANA codes) name the ports the census would reset.
pub fn summarize(
    observed: &Observed,
    watch: &Watch,
    sel: &Selection,
    scope: &str,
    disallowed: &[u16],
) -> (Applicability, Vec<MixClass>) {
    let classified = classify(&observed.conns, &observed.listeners, &observed.facts, sel);
    let (subnets, total) = figures(&classified);
    let census = observed.capture.is_some().then(|| {
        let evidence = Evidence {
            capture: observed.capture.clone(),
            sas: observed.facts.sas.clone(),
            listeners: observed.listeners.clone(),
            subnets: sel.subnets.clone(),
            disallowed: disallowed.to_vec(),
        };
        census(&classified, &evidence)
    });
    let classes = mix(
        &classified,
        &observed.listeners,
        &sel.thresholds,
        observed.window,
    );
    let record = Applicability {
        scope: scope.to_string(),
        filter_subnets: sel
            .subnets
            .iter()
            .map(|n| n.network().to_string())
            .collect(),
        filter_port: sel.port,
        started_unix_s: observed.started_unix_s,
        window_s: observed.window.as_secs_f64(),
        interval_ms: watch.interval.as_secs_f64() * 1e3,
        samples: observed.dumps,
        slowest_dump_ms: observed.slowest_dump.as_secs_f64() * 1e3,
        close_events: observed.close_events,
        close_events_subscribed: observed.close_events_refused.is_none(),
        thresholds: sel.thresholds.clone(),
        subnets,
        total,
        projection: None,
        census,
    };
    (record, classes)
}
