//! Offload projection (as for zIIP-assisted IPsec on z/OS) from RMF workload
//! activity: APPL% CP (the workload's time on general engines, % of one
//! engine), IIPCP (the offload-eligible part of CP) and IIP (time already on
//! offload engines, % of one offload engine).
//!
//! No published IBM formula exists (RMF only defines the three fields); the
//! projection is:
//! eligible share = eligible ÷ CPU; offload demand in offload-engine % =
//! IIPCP ÷ NF + IIP, where NF is the offload engine's speed relative to a
//! general engine; engines needed = ⌈demand ÷ target⌉; with k engines
//! configured the work above k × 100% spills back to the general engines
//! (IIPHONORPRIORITY=YES), costing spill × NF of general-engine time.

use serde::Serialize;

use crate::error::PlanError;
use crate::report::{num, pct, Report, Table};

/// Inputs of `plan offload`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OffloadInput {
    /// APPL% CP of the workload, % of one general engine.
    pub appl_cp_pct: f64,
    /// APPL% IIPCP: offload-eligible time that ran on general engines.
    pub iipcp_pct: f64,
    /// APPL% IIP: time on offload engines, % of one offload engine (0 = N/A).
    pub iip_pct: f64,
    /// General engines (CPs) of the LPAR.
    pub general_engines: u32,
    /// Measured busy of each general engine (CPU activity report), all work.
    pub cp_busy_pct: Option<f64>,
    /// Offload engine speed ÷ general engine speed (1 on full-capacity CPs).
    pub speed_factor: f64,
    /// Offload engines to project for; `None` projects for the number needed.
    pub offload_engines: Option<u32>,
    pub target_util_pct: f64,
}

/// The general engines with `engines` offload engines configured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Projection {
    pub offload_engines: u32,
    /// Busy of each offload engine from this workload.
    pub offload_busy_pct_per_engine: f64,
    /// Eligible work that does not fit and runs on general engines, in % of
    /// one general engine.
    pub spill_cp_pct: f64,
    /// This workload's busy on each general engine.
    pub workload_cp_pct_per_engine: f64,
    /// Whole busy of each general engine (needs `cp_busy_pct`).
    pub cp_busy_pct_per_engine: Option<f64>,
}

/// Result of `plan offload`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OffloadPlan {
    pub inputs: OffloadInput,
    /// `CP ÷ general engines`: this workload's busy on each general engine now.
    pub workload_cp_pct_per_engine: f64,
    /// `IIPCP + IIP × NF`: eligible CPU in % of one general engine.
    pub eligible_cp_equiv_pct: f64,
    /// `CP + IIP × NF`: the workload's CPU in % of one general engine.
    pub workload_cp_equiv_pct: f64,
    /// Eligible share of the workload's captured CPU.
    pub eligible_of_workload_pct: f64,
    /// `cp_busy × general engines` (+ IIP × NF): all measured CPU.
    pub measured_cp_equiv_pct: Option<f64>,
    /// Measured CPU not eligible: `measured − eligible`.
    pub not_eligible_pct: Option<f64>,
    /// Eligible share of all measured CPU (≈ 92% in IBM's zIIP-assisted IPsec
    /// bulk-data sample).
    pub eligible_of_measured_pct: Option<f64>,
    /// `IIPCP ÷ NF + IIP`: offload engines' worth of work, in %.
    pub offload_demand_pct: f64,
    /// `⌈demand ÷ target⌉`.
    pub offload_engines_needed: u32,
    /// The general engines now and with 0, 1, … offload engines.
    pub projections: Vec<Projection>,
}

/// Projects the general engines with `k` offload engines.
fn project(input: &OffloadInput, demand_pct: f64, k: u32) -> Projection {
    let capacity_pct = f64::from(k) * 100.0;
    let on_offload = demand_pct.min(capacity_pct);
    let spill_cp_pct = (demand_pct - capacity_pct).max(0.0) * input.speed_factor;
    let n = f64::from(input.general_engines);
    let remaining = input.appl_cp_pct - input.iipcp_pct + spill_cp_pct;
    Projection {
        offload_engines: k,
        offload_busy_pct_per_engine: if k == 0 {
            0.0
        } else {
            on_offload / f64::from(k)
        },
        spill_cp_pct,
        workload_cp_pct_per_engine: remaining / n,
        cp_busy_pct_per_engine: input
            .cp_busy_pct
            .map(|busy| (busy * n - input.iipcp_pct + spill_cp_pct) / n),
    }
}

fn validate(input: &OffloadInput) -> Result<(), PlanError> {
    let check = |flag: &str, v: f64| {
        if v >= 0.0 && v.is_finite() {
            Ok(())
        } else {
            Err(PlanError::bad(
                flag,
                &num(v),
                "must be 0 or more",
                "copy it from the RMF APPL% column",
            ))
        }
    };
    check("appl-cp", input.appl_cp_pct)?;
    check("iipcp", input.iipcp_pct)?;
    check("iip", input.iip_pct)?;
    if input.iipcp_pct > input.appl_cp_pct * (1.0 + 1e-9) {
        return Err(PlanError::bad(
            "iipcp",
            &num(input.iipcp_pct),
            format!("exceeds --appl-cp {}", num(input.appl_cp_pct)),
            "IIPCP is the eligible part of CP; check the RMF columns",
        ));
    }
    if input.general_engines == 0 {
        return Err(PlanError::bad(
            "general-engines",
            "0",
            "must be at least 1",
            "give the CPs of the LPAR, e.g. 2",
        ));
    }
    if input.speed_factor.is_nan() || input.speed_factor <= 0.0 {
        return Err(PlanError::bad(
            "speed-factor",
            &num(input.speed_factor),
            "must be greater than 0",
            "1 when both engine types run at full speed",
        ));
    }
    if let Some(b) = input.cp_busy_pct {
        if !(0.0..=100.0).contains(&b) {
            return Err(PlanError::bad(
                "cp-busy",
                &num(b),
                "must be 0% to 100%",
                "give the busy of each general engine",
            ));
        }
    }
    Ok(())
}

/// Projects offload engines and general-engine relief.
pub fn plan(input: &OffloadInput) -> Result<OffloadPlan, PlanError> {
    validate(input)?;
    let nf = input.speed_factor;
    let n = f64::from(input.general_engines);
    let eligible = input.iipcp_pct + input.iip_pct * nf;
    let workload = input.appl_cp_pct + input.iip_pct * nf;
    let measured = input.cp_busy_pct.map(|b| b * n + input.iip_pct * nf);
    let demand = input.iipcp_pct / nf + input.iip_pct;
    let needed = ((demand / input.target_util_pct) * (1.0 - 1e-12))
        .ceil()
        .max(0.0) as u32;
    let last = input.offload_engines.unwrap_or(0).max(needed).min(64);
    Ok(OffloadPlan {
        inputs: input.clone(),
        workload_cp_pct_per_engine: input.appl_cp_pct / n,
        eligible_cp_equiv_pct: eligible,
        workload_cp_equiv_pct: workload,
        eligible_of_workload_pct: if workload > 0.0 {
            eligible / workload * 100.0
        } else {
            0.0
        },
        measured_cp_equiv_pct: measured,
        not_eligible_pct: measured.map(|m| m - eligible),
        eligible_of_measured_pct: measured.filter(|m| *m > 0.0).map(|m| eligible / m * 100.0),
        offload_demand_pct: demand,
        offload_engines_needed: needed,
        projections: (0..=last).map(|k| project(input, demand, k)).collect(),
    })
}

/// Two decimals as RMF prints APPL% (more with a larger `digits`).
fn decimals(digits: usize) -> usize {
    digits.saturating_sub(1).max(2)
}

impl OffloadPlan {
    /// The human tables: the derivation, then the projection per engine count.
    pub fn report(&self, digits: usize) -> Report {
        let dec = decimals(digits);
        let p = |x: f64| format!("{x:.dec$}%");
        let mut notes = Vec::new();
        if self.offload_demand_pct > 100.0 {
            notes.push(format!(
                "the eligible work would saturate a single offload engine, with at least {} spilling over to general engines",
                p(self.offload_demand_pct - 100.0)
            ));
        }
        let mut warnings = Vec::new();
        if let Some(m) = self.measured_cp_equiv_pct {
            if m + 1e-9 < self.workload_cp_equiv_pct {
                warnings.push(format!(
                    "--cp-busy × engines ({}) is less than the workload's CP ({}): check that --cp-busy is per engine",
                    p(m),
                    p(self.workload_cp_equiv_pct)
                ));
            }
        }
        Report {
            title: "Offload projection from RMF workload activity (zIIP-assisted IPsec method)"
                .into(),
            tables: vec![self.steps_table(dec), self.projection_table(dec)],
            notes,
            warnings,
        }
    }

    fn steps_table(&self, dec: usize) -> Table {
        let i = &self.inputs;
        let p = |x: f64| format!("{x:.dec$}%");
        let f = |x: f64| format!("{x:.dec$}");
        let n = num(f64::from(i.general_engines));
        let nf = num(i.speed_factor);
        let (cp, iipcp, iip) = (num(i.appl_cp_pct), num(i.iipcp_pct), num(i.iip_pct));
        let mut t = Table::steps();
        t.row([
            "workload busy per general engine".to_string(),
            format!("CP {cp} ÷ {n} engines"),
            p(self.workload_cp_pct_per_engine),
        ]);
        t.row([
            "eligible share of the workload".to_string(),
            format!("(IIPCP {iipcp} + IIP {iip} × NF {nf}) ÷ (CP {cp} + IIP {iip} × NF {nf})"),
            p(self.eligible_of_workload_pct),
        ]);
        if let (Some(busy), Some(m), Some(ne), Some(share)) = (
            i.cp_busy_pct,
            self.measured_cp_equiv_pct,
            self.not_eligible_pct,
            self.eligible_of_measured_pct,
        ) {
            let eligible = f(self.eligible_cp_equiv_pct);
            t.row([
                "measured CPU, normalised to one engine".to_string(),
                format!("{} busy × {n} engines + IIP {iip} × NF {nf}", pct(busy, 9)),
                p(m),
            ]);
            t.row([
                "measured CPU not eligible".to_string(),
                format!("{} − {eligible}", f(m)),
                p(ne),
            ]);
            t.row([
                "eligible share of measured CPU".to_string(),
                format!("{eligible} ÷ {}", f(m)),
                p(share),
            ]);
        }
        t.row([
            "offload demand".to_string(),
            format!("IIPCP {iipcp} ÷ NF {nf} + IIP {iip}"),
            format!("{} of one offload engine", p(self.offload_demand_pct)),
        ]);
        t.row([
            "offload engines needed".to_string(),
            format!(
                "⌈{} ÷ {}⌉",
                p(self.offload_demand_pct),
                pct(i.target_util_pct, 6)
            ),
            self.offload_engines_needed.to_string(),
        ]);
        if i.iip_pct > 0.0 {
            t.row([
                "measured spill-over per general engine".to_string(),
                format!("IIPCP {iipcp} ÷ {n} engines"),
                p(i.iipcp_pct / f64::from(i.general_engines)),
            ]);
        }
        t
    }

    fn projection_table(&self, dec: usize) -> Table {
        let p = |x: f64| format!("{x:.dec$}%");
        let mut t = Table::new(&[
            "offload engines",
            "offload busy/engine",
            "spill to general",
            "workload busy/general engine",
            "general engine busy",
        ])
        .with_caption(format!(
            "projection: spill = max(0, demand − k × 100%) × NF; general = (CP − IIPCP + spill) ÷ {}",
            self.inputs.general_engines
        ));
        for pr in &self.projections {
            t.row([
                pr.offload_engines.to_string(),
                p(pr.offload_busy_pct_per_engine),
                p(pr.spill_cp_pct),
                p(pr.workload_cp_pct_per_engine),
                pr.cp_busy_pct_per_engine.map_or("-".to_string(), p),
            ]);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_ziip() -> OffloadInput {
        OffloadInput {
            appl_cp_pct: 105.17,
            iipcp_pct: 105.17,
            iip_pct: 0.0,
            general_engines: 2,
            cp_busy_pct: Some(56.88),
            speed_factor: 1.0,
            offload_engines: None,
            target_util_pct: 100.0,
        }
    }

    /// IBM's zIIP-assisted IPsec sample, "RMF report for bulk data and no
    /// zIIPs": CP 105.17 on 2 CPs is 52.59% per CP; 56.88% busy per CP
    /// normalises to 113.76%; 8.59% is not eligible; ≈ 92% of the CPU would
    /// move; one zIIP leaves ≥ 5% spill-over.
    #[test]
    fn ziip_ipsec_no_ziip() {
        let p = plan(&no_ziip()).unwrap();
        assert_eq!(format!("{:.2}", p.workload_cp_pct_per_engine), "52.59");
        assert_eq!(format!("{:.2}", p.measured_cp_equiv_pct.unwrap()), "113.76");
        assert_eq!(format!("{:.2}", p.not_eligible_pct.unwrap()), "8.59");
        assert_eq!(p.eligible_of_measured_pct.unwrap().round(), 92.0);
        assert_eq!(p.eligible_of_workload_pct, 100.0);
        assert_eq!(p.offload_engines_needed, 2);
        let one = p.projections[1];
        assert_eq!(format!("{:.2}", one.spill_cp_pct), "5.17");
        assert!(one.spill_cp_pct >= 5.0);
        assert_eq!(one.offload_busy_pct_per_engine, 100.0);
        assert_eq!(p.projections[2].spill_cp_pct, 0.0);
        assert_eq!(p.projections[2].workload_cp_pct_per_engine, 0.0);
        assert_eq!(
            format!("{:.2}", p.projections[0].workload_cp_pct_per_engine),
            "52.59"
        );
        let notes = p.report(3).notes.join(" ");
        assert!(
            notes.contains("saturate a single offload engine"),
            "{notes}"
        );
    }

    /// IBM's zIIP-assisted IPsec sample, "RMF report for bulk data and one
    /// zIIP": IIP 95.13, IIPCP 7.78 (= CP) on 2 CPs: 7.78 ÷ 2 = 3.89% per CP,
    /// the spill-over.
    #[test]
    fn ziip_ipsec_one_ziip() {
        let p = plan(&OffloadInput {
            appl_cp_pct: 7.78,
            iipcp_pct: 7.78,
            iip_pct: 95.13,
            general_engines: 2,
            cp_busy_pct: None,
            speed_factor: 1.0,
            offload_engines: Some(1),
            target_util_pct: 100.0,
        })
        .unwrap();
        assert_eq!(format!("{:.2}", p.workload_cp_pct_per_engine), "3.89");
        assert!((p.offload_demand_pct - 102.91).abs() < 1e-9);
        assert_eq!(p.offload_engines_needed, 2);
        let rows = &p.report(3).tables[0].rows;
        let spill = rows
            .iter()
            .find(|r| r[0].starts_with("measured spill-over"))
            .unwrap();
        assert_eq!(spill[2], "3.89%");
    }

    #[test]
    fn speed_factor_converts_between_engines() {
        let mut input = no_ziip();
        input.speed_factor = 2.0; // offload engine twice as fast as a CP
        let p = plan(&input).unwrap();
        assert!((p.offload_demand_pct - 52.585).abs() < 1e-9);
        assert_eq!(p.offload_engines_needed, 1);
        input.target_util_pct = 50.0;
        assert_eq!(plan(&input).unwrap().offload_engines_needed, 2);
    }

    #[test]
    fn iipcp_above_cp_is_an_input_error() {
        let mut input = no_ziip();
        input.iipcp_pct = 110.0;
        let e = plan(&input).unwrap_err().to_string();
        assert!(
            e.starts_with("--iipcp '110': exceeds --appl-cp 105.17"),
            "{e}"
        );
    }
}
