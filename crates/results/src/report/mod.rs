//! The performance summary report (in the shape of the z/OS Communications
//! Server performance summary report): per study its purpose, environment
//! configuration, observations generated from the verdicts, numbered figures,
//! the comparison tables and, when the variants differ by kernel, the kernel
//! comparison (a release-to-release table); then a summary table across
//! studies in the same form and an appendix on notation and CPU cost.
//!
//! [`build_report`] is a pure function from stored runs to the HTML page, the
//! Markdown text and the SVG files the Markdown links to. Runs carrying
//! `sweep` labels are left out of the comparisons and shown in a sweep
//! subsection instead ([`crate::sweep::report`]).

mod env;
mod input;

use stackbench_record::RunRecord;

use crate::compare::output::{format_pct, format_value, summary_sentences};
use crate::compare::{Comparison, Margins};
use crate::complete::{left_out_line, split_complete, variant_of};
use crate::doc::{render_html, render_markdown, Block};
use crate::figure::{workload_figure, FigureError, VariantSamples};
use crate::metric::{class_key, Metric, Samples};
use crate::observe::{changed_sentences, conclusion};
use crate::quality::Quality;
use crate::release_table::{ratio_figure, release_table, variant_kernels, ReleaseTable};
use crate::store::{Labels, StoredRun};
use crate::sweep::is_swept;
use crate::sweep::report::{sweep_section, MarksOf, SweepSection};
use crate::sweep::Axis;
use crate::verdict_table::verdict_table;
use env::{environment_items, study_file_mismatches};
use input::Variants;
pub use input::{studies, InputError, StudyInput};

/// Report-wide options.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    pub title: String,
    /// When the report was made, as text (passed in so output is reproducible).
    pub generated: String,
    pub margins: Margins,
}

/// A rendered report.
#[derive(Debug, Clone)]
pub struct Report {
    pub html: String,
    pub markdown: String,
    /// `(relative path, SVG)` of each figure the Markdown links to.
    pub figures: Vec<(String, String)>,
}

fn comparison_table(c: &Comparison) -> Block {
    let header = vec![
        "Workload".to_string(),
        "Metric".to_string(),
        c.a_name.clone(),
        c.b_name.clone(),
        "Change".to_string(),
        "90% CI".to_string(),
        "Verdict".to_string(),
    ];
    let rows = c
        .rows
        .iter()
        .map(|r| {
            let mean = |m: Option<f64>, n: usize| {
                m.map_or("-".into(), |m| format!("{} (n={n})", format_value(m)))
            };
            let ci = match (r.ci_low_pct, r.ci_high_pct) {
                (Some(lo), Some(hi)) => format!("{} … {}", format_pct(lo), format_pct(hi)),
                _ => "-".into(),
            };
            vec![
                r.workload.clone(),
                r.metric.label().to_string(),
                mean(r.mean_a, r.n_a),
                mean(r.mean_b, r.n_b),
                r.change_pct.map_or("-".into(), format_pct),
                ci,
                r.verdict_label(),
            ]
        })
        .collect();
    Block::Table { header, rows }
}

struct Builder<'o> {
    blocks: Vec<Block>,
    figures: Vec<(String, String)>,
    /// (study, comparison) for the summary table.
    comparisons: Vec<(String, Comparison)>,
    opts: &'o ReportOptions,
}

impl Builder<'_> {
    fn h(&mut self, level: u8, text: impl Into<String>, id: Option<String>) {
        self.blocks.push(Block::Heading {
            level,
            text: text.into(),
            id,
        });
    }

    fn p(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Paragraph(text.into()));
    }

    fn figure(&mut self, caption: String, svg: String) {
        let number = self.figures.len() + 1;
        let file = format!("figures/figure-{number}.svg");
        self.figures.push((file.clone(), svg.clone()));
        self.blocks.push(Block::Figure {
            number,
            caption,
            svg,
            file,
        });
    }

    fn study(&mut self, input: &StudyInput) -> Result<(), FigureError> {
        // Aggregates are made of complete runs only (see `complete`); the
        // incomplete ones are marked on the figures and listed below them.
        let (complete, incomplete) = split_complete(&input.runs);
        let quality = Quality::of(&input.runs);
        let marks =
            |axis: &Axis, workload: &str, class: usize| quality.sweep_marks(axis, workload, class);
        let sweep = study_sweep(&input.name, &complete, &marks)?;
        // Swept runs are shown by the sweep subsection; the rest as always.
        let plain: Vec<&StoredRun> = complete
            .iter()
            .copied()
            .filter(|r| !is_swept(&r.labels))
            .collect();
        let v = Variants::of(plain.iter().copied());
        let all = Samples::collect(plain.iter().map(|r| &r.record));
        let mut keys = all.keys.clone();
        keys.extend(sweep.iter().flat_map(|s| s.workloads.iter().cloned()));
        let mut environment =
            environment_items(input, &Variants::of(complete.iter().copied()), &keys);
        environment.extend(sweep.as_ref().map(|s| format!("Swept: {}", s.environment)));
        self.h(
            2,
            format!("Study: {}", input.name),
            Some(format!("study-{}", slug(&input.name))),
        );
        self.h(3, "Purpose", None);
        self.p(if input.description.is_empty() {
            "No description was given in the study file."
        } else {
            &input.description
        });
        let mismatches = study_file_mismatches(input, &complete);
        if !mismatches.is_empty() {
            self.p(format!(
                "Note: {}. This report follows the runs; text taken from the study file, such as the description above, may not.",
                mismatches.join("; ")
            ));
        }
        self.h(3, "Environment configuration", None);
        self.p("Below is the environment configuration in which the data was collected:");
        self.blocks.push(Block::List(environment));
        self.h(3, "Observations", None);
        self.blocks
            .extend(left_out_line(&incomplete).map(Block::Paragraph));
        if let Some(s) = &sweep {
            self.blocks.push(Block::List(s.observations.clone()));
        }
        let comps: Vec<Comparison> = (1..v.groups.len())
            .map(|i| v.compare_with_baseline(i, self.opts.margins))
            .collect();
        self.observations(&comps);
        // A study of swept runs only has no ordinary results to show.
        let ordinary = !plain.is_empty() || sweep.is_none();
        if v.groups.len() < 2 && ordinary {
            self.p("Only one variant was measured, so there is nothing to compare; the figures show its results.");
        }
        if ordinary {
            self.h(3, "Results", None);
        }
        self.workload_figures(&input.name, &v, &quality, &incomplete)?;
        let release: Vec<ReleaseTable> = variant_kernels(&v.groups)
            .map(|k| {
                let tables = comps.iter().enumerate();
                tables
                    .map(|(i, c)| release_table(c, &k[0], &k[i + 1]))
                    .collect()
            })
            .unwrap_or_default();
        for c in comps {
            self.p(format!(
                "{} compared with {} (baseline):",
                c.b_name, c.a_name
            ));
            self.blocks.push(comparison_table(&c));
            let cut: Vec<&StoredRun> = incomplete
                .iter()
                .copied()
                .filter(|r| !is_swept(&r.labels))
                .filter(|r| variant_of(r) == c.a_name || variant_of(r) == c.b_name)
                .collect();
            self.blocks
                .extend(left_out_line(&cut).map(Block::Paragraph));
            if let Some(reason) = &c.no_verdict_reason {
                self.p(format!("Note: {reason}."));
            }
            self.comparisons.push((input.name.clone(), c));
        }
        self.release(&input.name, &release)?;
        if let Some(s) = sweep {
            let cut: Vec<&StoredRun> = incomplete
                .iter()
                .copied()
                .filter(|r| is_swept(&r.labels))
                .collect();
            self.sweep(s, &complete, &cut, &quality);
        }
        self.h(3, "Measurement quality", None);
        let names: Vec<String> = Variants::of(&input.runs)
            .groups
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        self.blocks.extend(quality.blocks(&names));
        Ok(())
    }

    /// One figure per workload class of the study's unswept runs: bars over
    /// the complete runs of each variant (`v`), marks for the noted runs,
    /// and under each figure the incomplete runs it left out.
    fn workload_figures(
        &mut self,
        study: &str,
        v: &Variants,
        quality: &Quality,
        incomplete: &[&StoredRun],
    ) -> Result<(), FigureError> {
        let plain: Vec<&StoredRun> = v.groups.iter().flat_map(|g| g.1.iter().copied()).collect();
        let all = Samples::collect(plain.iter().map(|r| &r.record));
        let per_variant: Vec<(String, Samples)> = (0..v.groups.len())
            .map(|i| {
                (
                    v.groups[i].0.clone(),
                    Samples::collect(v.groups[i].1.iter().map(|r| &r.record)),
                )
            })
            .collect();
        for key in &all.keys {
            let variants: Vec<VariantSamples> = per_variant
                .iter()
                .map(|(n, s)| VariantSamples {
                    name: n,
                    samples: s,
                    marks: quality.marks(n, key),
                })
                .collect();
            let svg = workload_figure(key, &variants)?;
            let cpu = [Metric::CpuClientUsPerTran, Metric::CpuServerUsPerTran]
                .iter()
                .any(|m| !all.get(key, *m).is_empty());
            let runs: Vec<String> = per_variant
                .iter()
                .map(|(n, s)| format!("{n} {}", s.get(key, Metric::RateTps).len()))
                .collect();
            let cut: Vec<&StoredRun> = incomplete
                .iter()
                .copied()
                .filter(|r| !is_swept(&r.labels))
                .filter(|r| r.record.classes.iter().any(|c| &class_key(c) == key))
                .collect();
            let mut caption = format!(
                "{}: {key} — transaction rate, latency (p50, p99){} by variant; bars are means over the complete repetitions, error bars ±1 standard deviation (runs: {}).",
                study,
                if cpu { " and CPU per transaction on each side" } else { "" },
                runs.join(", ")
            );
            if !cut.is_empty() {
                caption.push_str(" Incomplete runs are drawn as hollow red circles at their own values and are not in the bars.");
            }
            if let Some(q) = quality.caption(key, &plain) {
                caption.push(' ');
                caption.push_str(&q);
            }
            self.figure(caption, svg);
            self.blocks
                .extend(left_out_line(&cut).map(Block::Paragraph));
        }
        Ok(())
    }

    /// Per variant its conclusion, then one verdict table for the study,
    /// sentences only for the verdicts that found a change, and the notes
    /// (each once, though every comparison may give it).
    fn observations(&mut self, comps: &[Comparison]) {
        for c in comps {
            self.p(conclusion(c));
        }
        if let Some(table) = verdict_table(comps) {
            self.blocks.push(table);
        }
        let changed: Vec<String> = comps.iter().flat_map(changed_sentences).collect();
        if !changed.is_empty() {
            self.blocks.push(Block::List(changed));
        } else if !comps.is_empty() {
            self.p("No verdict found a change: every metric is EQUIVALENT or INCONCLUSIVE.");
        }
        let mut notes: Vec<String> = Vec::new();
        for n in comps.iter().flat_map(|c| &c.notes) {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
        if !notes.is_empty() {
            self.blocks.push(Block::List(
                notes.iter().map(|n| format!("Note: {n}")).collect(),
            ));
        }
    }

    /// The kernel comparison of a study whose variants differ by `kernel`
    /// (see `release_table`): one table and one figure per candidate.
    fn release(&mut self, study: &str, tables: &[ReleaseTable]) -> Result<(), FigureError> {
        if tables.is_empty() {
            return Ok(());
        }
        self.h(3, "Kernel comparison", None);
        for t in tables {
            self.blocks.extend(t.blocks());
            self.figure(t.figure_caption(study), ratio_figure(t)?);
        }
        Ok(())
    }

    /// The subsection of a study's swept runs (see `sweep::report`); a figure
    /// whose every run is warned says so in its caption.
    fn sweep(
        &mut self,
        s: SweepSection,
        complete: &[&StoredRun],
        incomplete: &[&StoredRun],
        quality: &Quality,
    ) {
        self.h(3, s.heading, None);
        self.blocks.extend(s.intro);
        self.blocks
            .extend(left_out_line(incomplete).map(Block::Paragraph));
        for f in s.figures {
            let shown: Vec<&StoredRun> = complete
                .iter()
                .copied()
                .filter(|r| is_swept(&r.labels))
                .filter(|r| r.labels.get("workload") == Some(&f.workload))
                .collect();
            let mut caption = f.caption;
            if let Some(q) = quality.all_warned_caption(&shown) {
                caption = format!("{caption} {q}");
            }
            self.figure(caption, f.svg);
            self.blocks.extend(f.after);
        }
    }

    fn summary(&mut self) {
        self.h(2, "Summary across studies", Some("summary".into()));
        if self.comparisons.is_empty() {
            self.p("No study had two variants to compare.");
            return;
        }
        let header = [
            "Study",
            "Comparison",
            "Workload",
            "Throughput relative",
            "CPU/tr client relative",
            "CPU/tr server relative",
        ]
        .map(String::from)
        .to_vec();
        let mut rows = Vec::new();
        let cell = |c: &Comparison, key: &str, m: Metric| {
            c.row(key, m)
                .and_then(|r| {
                    Some(format!(
                        "{} ({})",
                        format_pct(r.change_pct?),
                        r.verdict_label()
                    ))
                })
                .unwrap_or_else(|| "-".into())
        };
        for (study, c) in &self.comparisons {
            let what = format!("{} vs {}", c.b_name, c.a_name);
            let mut keys: Vec<&str> = Vec::new();
            for r in &c.rows {
                if !keys.contains(&r.workload.as_str()) {
                    keys.push(&r.workload);
                }
            }
            for key in keys {
                rows.push(vec![
                    study.clone(),
                    what.clone(),
                    key.to_string(),
                    cell(c, key, Metric::RateTps),
                    cell(c, key, Metric::CpuClientUsPerTran),
                    cell(c, key, Metric::CpuServerUsPerTran),
                ]);
            }
            let avg = |v: Option<f64>| v.map_or("-".to_string(), format_pct);
            let s = &c.summary;
            rows.push(vec![
                study.clone(),
                what,
                "On average (geometric mean)".into(),
                avg(s.throughput_change_pct),
                avg(s.cpu_client_change_pct),
                avg(s.cpu_server_change_pct),
            ]);
        }
        self.blocks.push(Block::Table { header, rows });
        let lines: Vec<String> = self
            .comparisons
            .iter()
            .flat_map(|(_, c)| summary_sentences(c))
            .collect();
        self.blocks.push(Block::List(lines));
    }

    fn appendix(&mut self) {
        self.h(2, "Appendix", Some("appendix".into()));
        self.h(3, "Workload naming convention", None);
        for text in APPENDIX_NOTATION {
            self.p(*text);
        }
        self.h(3, "CPU cost per transaction", None);
        for text in APPENDIX_CPU {
            self.p(*text);
        }
        self.h(3, "How verdicts are reached", None);
        let m = self.opts.margins;
        self.p(format!(
            "For each workload and metric, the ratio of B to A is estimated from the logarithms of the per-run values: the difference of their means, exponentiated, with a 90% confidence interval from Welch's t (unequal variances). The verdict is EQUIVALENT when the whole interval lies within the margin (±{}% for rate, ±{}% for CPU per transaction, ±{}% for latency) — the two one-sided tests at α = 0.05 — BETTER or WORSE when it lies wholly beyond it, and INCONCLUSIVE otherwise. Averages across workloads are geometric means of the ratios. Fewer than 5 runs per side give wide intervals.",
            m.rate_pct, m.cpu_pct, m.latency_pct
        ));
    }
}

const APPENDIX_NOTATION: &[&str] = &[
    "Workloads are written [Kind][Clients](BytesSentByClient/BytesSentByServer). For example, RR10(1B/100B) is a request/response workload with 10 clients, each sending 1 byte and receiving 100 bytes per transaction.",
    "RR x(y/z): x clients doing request/response transactions on connections they keep open, sending y bytes and receiving z bytes per transaction.",
    "CRR x(y/z): x clients doing connect/request/response transactions: each transaction opens a connection, sends y bytes, receives z bytes and closes it.",
    "STR x(y/z): x clients streaming: each transaction sends y bytes and receives z bytes as one transfer; STR3(1B/20MB) is a GET of 20 MB, STR3(20MB/1B) a PUT.",
    "Sizes are binary: kB = 1024 bytes, MB = 1024² bytes. A mix such as RR1(100B/800B)+STR10(1B/20MB) runs its classes at once, with figures kept per class.",
];

const APPENDIX_CPU: &[&str] = &[
    "CPU cost per transaction is the CPU time a side's CPUs were busy during the measurement window divided by the transactions completed in that window, in microseconds: CPU µs/tr = (window × CPUs − idle − iowait, in CPU-seconds, × 10⁶) / transactions, from per-CPU /proc/stat deltas over the CPUs the side is pinned to, so the network stack's interrupt and softirq work on those CPUs counts. It is computed separately for the client (driver) and the server (responder); the process view (the side's own user + system time) is stored beside it.",
    "For example, a side using 25% of 4 CPUs — one CPU's worth — for a 10-second window consumes 10 CPU-seconds; with 1,000,000 transactions in those 10 seconds (100,000 tr/s) the cost is 10 CPU-seconds / 1,000,000 transactions = 10 µs/tr.",
];

/// The sweep subsection of a study's complete runs that carry `sweep` labels.
fn study_sweep(
    study: &str,
    complete: &[&StoredRun],
    marks: &MarksOf,
) -> Result<Option<SweepSection>, FigureError> {
    let runs: Vec<(&Labels, &RunRecord)> = complete
        .iter()
        .filter(|r| is_swept(&r.labels))
        .map(|r| (&r.labels, &r.record))
        .collect();
    sweep_section(study, &runs, marks)
}

fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// Builds the report over `studies`.
pub fn build_report(studies: &[StudyInput], opts: &ReportOptions) -> Result<Report, FigureError> {
    let mut b = Builder {
        blocks: Vec::new(),
        figures: Vec::new(),
        comparisons: Vec::new(),
        opts,
    };
    b.h(1, opts.title.clone(), Some("top".into()));
    b.p(format!(
        "Generated {} by stackbench {}.",
        opts.generated,
        env!("CARGO_PKG_VERSION")
    ));
    let names: Vec<String> = studies.iter().map(|s| s.name.clone()).collect();
    b.blocks.push(Block::List(
        names
            .iter()
            .map(|n| format!("Study: {n}"))
            .chain(["Summary across studies".into(), "Appendix".into()])
            .collect(),
    ));
    for s in studies {
        b.study(s)?;
    }
    b.summary();
    b.appendix();
    Ok(Report {
        html: render_html(&opts.title, &b.blocks),
        markdown: render_markdown(&b.blocks),
        figures: b.figures,
    })
}
