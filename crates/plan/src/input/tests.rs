//! Flags and plan files to plans, with every file held in memory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ctx::field_names;
use super::*;

/// A reader over `files`; any other path is missing.
fn reader(files: &[(&str, &str)]) -> impl Fn(&Path) -> std::io::Result<String> {
    let files: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
    move |path: &Path| {
        files
            .get(path)
            .cloned()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
    }
}

fn none(_: &[(String, String)]) -> Option<Paced> {
    None
}

fn with_ctx<R>(
    file: Option<&str>,
    files: &[(&str, &str)],
    paced: &dyn Fn(&[StoredClass]) -> Option<Paced>,
    f: impl FnOnce(Result<Ctx<'_>, PlanError>) -> R,
) -> R {
    let read = reader(files);
    let env = Env { read: &read, paced };
    f(Ctx::new(file.map(Path::new), 3, env))
}

/// The plan file's keys are the flag names in declaration order, as clap
/// lists them.
#[test]
fn field_names_are_the_flags_in_declaration_order() {
    assert_eq!(
        field_names::<normalize::NormalizeArgs>(),
        ["networking-change", "networking-share", "profile"]
    );
    assert_eq!(field_names::<usl::UslArgs>()[..3], ["point", "csv", "from"]);
}

/// A flag given on the command line wins; an empty one takes the file's
/// value; paths in the file are relative to its directory; a lone value
/// of a repeatable flag becomes a list.
#[test]
fn flags_win_over_the_file_and_file_paths_follow_the_file() {
    let plan = "[usl]\nfrom = \"runs/a.json\"\nconfidence = \"90%\"\npoint = \"1:10\"\n";
    with_ctx(
        Some("dir/plan.toml"),
        &[("dir/plan.toml", plan)],
        &none,
        |ctx| {
            let ctx = ctx.unwrap();
            let cli = usl::UslArgs {
                confidence: Some("99%".into()),
                ..Default::default()
            };
            let merged = ctx.merge(cli, "usl").unwrap();
            assert_eq!(merged.confidence.as_deref(), Some("99%"));
            assert_eq!(merged.point, ["1:10"]);
            assert_eq!(
                merged.from,
                [Path::new("dir").join("runs/a.json").display().to_string()]
            );
        },
    );
}

#[test]
fn unknown_keys_and_unreadable_files_name_the_fix() {
    with_ctx(
        Some("p.toml"),
        &[("p.toml", "[normalize]\nshare = \"8%\"\n")],
        &none,
        |ctx| {
            let e = ctx
                .unwrap()
                .merge(normalize::NormalizeArgs::default(), "normalize");
            assert_eq!(
                e.unwrap_err().to_string(),
                "p.toml: unknown key 'share' in [normalize]; the keys are the flags of \
                 `plan normalize`: networking-change, networking-share, profile"
            );
        },
    );
    with_ctx(Some("gone.toml"), &[], &none, |ctx| {
        let e = ctx.err().unwrap().to_string();
        assert!(e.starts_with("--file gone.toml: cannot read it ("), "{e}");
    });
    with_ctx(None, &[], &none, |ctx| {
        let e = all(&ctx.unwrap()).err().unwrap().to_string();
        assert_eq!(e, "plan all needs a plan file: give -f PLAN.toml");
    });
}

/// `plan all` computes every section present, in the planner's order.
#[test]
fn all_computes_each_section_of_the_file() {
    let plan = "[normalize]\nnetworking-change = \"61%\"\n\
                [cpu]\nusers = 8000\nper-user = \"2/min\"\ncpu-per-tran = \"199.666us\"\nprocessors = 4\n";
    with_ctx(Some("p.toml"), &[("p.toml", plan)], &none, |ctx| {
        let outputs = all(&ctx.unwrap()).unwrap();
        let plans: Vec<Value> = outputs
            .iter()
            .map(|o| serde_json::from_str(&o.json).unwrap())
            .collect();
        assert_eq!(plans[0]["plan"], "cpu");
        assert_eq!(plans[1]["plan"], "normalize");
        assert!(!outputs[0].report.tables.is_empty());
    });
}

/// Missing inputs and contradicting ones are refused with the flag to give.
#[test]
fn inputs_are_checked_before_planning() {
    with_ctx(None, &[], &none, |ctx| {
        let ctx = ctx.unwrap();
        let cpu = |a: cpu::CpuArgs| compute(Section::Cpu(a), &ctx).err().unwrap().to_string();
        let e = cpu(cpu::CpuArgs {
            rate: Some("10/s".into()),
            users: Some("8".into()),
            cpu_per_tran: Some("1ms".into()),
            processors: Some("4".into()),
            ..Default::default()
        });
        assert!(
            e.starts_with("--rate and --users/--per-user both give"),
            "{e}"
        );
        let e = cpu(Default::default());
        assert!(e.starts_with("--cpu-per-tran is required"), "{e}");
        let e = compute(Section::Normalize(Default::default()), &ctx)
            .err()
            .unwrap()
            .to_string();
        assert!(e.starts_with("--networking-change is required"), "{e}");
    });
}

/// Paced stored runs are fitted only when the sweep analysis says they
/// saturate; otherwise its sentence is the refusal.
#[test]
fn paced_runs_are_fitted_only_when_they_saturate() {
    let verdict = |saturated| {
        move |runs: &[(String, String)]| {
            assert_eq!(runs.len(), 1);
            Some(Paced {
                saturated,
                text: "rate is N/(R+Z)".into(),
            })
        }
    };
    let args = || usl::UslArgs {
        from: vec!["nope.json".into()],
        ..Default::default()
    };
    // The runs are loaded first: a file that cannot be read is that error.
    with_ctx(None, &[], &verdict(false), |ctx| {
        let e = compute(Section::Usl(args()), &ctx.unwrap()).err().unwrap();
        assert!(
            e.to_string()
                .starts_with("--from nope.json: cannot read it"),
            "{e}"
        );
    });
    let saturation = |ctx: &Ctx<'_>| usl::saturation(ctx, &[("r.json".into(), "RR1".into())]);
    with_ctx(None, &[], &verdict(false), |ctx| {
        let e = saturation(&ctx.unwrap()).unwrap_err().to_string();
        assert_eq!(
            e,
            "--from: rate is N/(R+Z); give closed-loop runs, or a population swept until it saturates"
        );
    });
    with_ctx(None, &[], &verdict(true), |ctx| {
        let warning = saturation(&ctx.unwrap()).unwrap();
        assert_eq!(warning.as_deref(), Some("rate is N/(R+Z)"));
    });
}
