//! `stackbench`: the one binary. Thin: parses the command line with clap, hands
//! resolved settings to the runner, results and planner crates, prints what
//! they return, and maps errors to exit statuses (0 success, 1 a failed comparison, 2 usage or input error,
//! 3 an incomplete run).

mod agent_cmd;
mod applicability_cmd;
mod clap_error;
mod compare_cmd;
mod completions_cmd;
mod exit;
mod guest_cmd;
mod interrupt;
mod k8s_cmd;
mod lab_cmd;
mod man_cmd;
mod plan_cmd;
mod plan_render;
mod progress;
mod report_cmd;
mod results_cmd;
mod run_cmd;
mod serve_broker;
mod serve_cmd;
mod setting_flags;
mod study_cmd;
mod terminal;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Model, measure and plan network workloads on Linux.
#[derive(Debug, Parser)]
#[command(name = "stackbench", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// One value per process, parsed once: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Drive workloads against a responder and report rate, latency and errors per class.
    Run(run_cmd::RunArgs),
    /// Run the responder for drivers on this or other hosts.
    Serve(serve_cmd::ServeArgs),
    /// Run one segment of a run split over agents, for the controller at
    /// --controller (started by `run`/`study --agents N`, srun or a cluster).
    Agent(agent_cmd::AgentArgs),
    /// Capacity planning from measured costs: CPU, ratings, storage, offload,
    /// queueing models and scalability fits.
    Plan(plan_cmd::PlanArgs),
    /// List, show and export stored runs.
    Results(results_cmd::ResultsArgs),
    /// Compare two sets of runs (stored, selected by labels, or JSON files)
    /// with a verdict per workload and metric; exit status 1 on any WORSE.
    Compare(compare_cmd::CompareArgs),
    /// Write the performance summary report (HTML and Markdown) of stored studies.
    Report(report_cmd::ReportArgs),
    /// Run a study file: every workload × variant × repetition, interleaved, stored.
    Study(study_cmd::StudyArgs),
    /// Lab hosts and links: network namespaces as hosts, veth pairs with
    /// rate, MTU and offloads as links (needs root).
    Lab(lab_cmd::LabArgs),
    /// Run one stackbench command inside a guest VM booted with a chosen
    /// Linux kernel (features this host's kernel lacks: kTLS, ESP, netem).
    Guest(guest_cmd::GuestArgs),
    /// Kubernetes manifests that run a study with its agents and responders
    /// in a cluster (docs/cluster.md).
    K8s(k8s_cmd::K8sArgs),
    /// Watch this host's (or a lab host's) TCP connections and report which
    /// could take a faster path (SMCAT), with the projected CPU gain
    /// (docs/applicability.md).
    Applicability(applicability_cmd::ApplicabilityArgs),
    /// Write the shell completion script (bash, zsh, fish, elvish or
    /// powershell) to stdout.
    Completions(completions_cmd::CompletionsArgs),
    /// Write one man page per command and subcommand into DIR.
    Man(man_cmd::ManArgs),
}

/// A closed stdout (`stackbench … | head`) ends the program quietly, as
/// ripgrep does, instead of a panic from `print!`. SIGPIPE itself stays
/// ignored (Rust's default) so that a peer closing a data socket is an
/// error the engine counts, never a signal that kills the driver.
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if text.contains("failed printing to stdout") && text.contains("Broken pipe") {
            std::process::exit(exit::OK);
        }
        default(info);
    }));
}

/// The hidden `__tls-proxy` subcommand: the TLS proxy process of `tls_mode
/// sidecar`, started by driver and responder (never by hand, so outside clap
/// and its help).
fn tls_proxy_or_continue() {
    let mut args = std::env::args_os().skip(1);
    if args
        .next()
        .is_some_and(|a| a == stackbench_engine::sidecar::PROXY_SUBCOMMAND)
    {
        let rest: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
        std::process::exit(stackbench_engine::sidecar::proxy_main(&rest));
    }
}

/// The hidden `__guest-step` subcommand: one step of a run or study on
/// another kernel, run by the guest VM's init (see
/// [`stackbench_runner::guest_side`]); prints `{record, environment}`. And
/// `__guest-peer`: the responder's guest of a pair
/// ([`stackbench_runner::guest_pair`]); prints its adapter.
fn guest_step_or_continue() {
    let mut args = std::env::args().skip(1);
    let first = args.next();
    if first
        .as_deref()
        .is_some_and(|a| a == stackbench_runner::guest_pair::PEER_SUBCOMMAND)
    {
        let rest: Vec<String> = args.collect();
        let result = stackbench_runner::guest_pair::peer_main(&rest)
            .map(|line| {
                println!("{line}");
                exit::OK
            })
            .map_err(run_cmd::run_error);
        std::process::exit(exit::code_for(result));
    }
    if first.is_some_and(|a| a == stackbench_runner::guest_step::STEP_SUBCOMMAND) {
        let rest: Vec<String> = args.collect();
        let mut terminal = progress::Terminal::default();
        let mut runner = interrupt::runner(&mut terminal);
        let result = stackbench_runner::guest_side::step_main(&rest, &mut runner)
            .map(|line| {
                println!("{line}");
                exit::OK
            })
            .map_err(run_cmd::run_error);
        std::process::exit(exit::code_for(result));
    }
}

/// The hidden `__docs PAGE` subcommand: prints a reference page generated
/// from the code (`settings`: docs/settings.md; `record`: docs/record.md;
/// `schema`: docs/record.schema.json; `backends`: docs/backends.md), for maintainers
/// regenerating docs/, so outside clap and its help.
fn docs_or_continue() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() != Some("__docs") {
        return;
    }
    let page = args.next();
    match page.as_deref() {
        Some("settings") => {
            print!("{}", stackbench_model::settings::reference::settings_page());
            std::process::exit(exit::OK);
        }
        Some("record") => {
            print!("{}", stackbench_record::reference::record_page());
            std::process::exit(exit::OK);
        }
        Some("schema") => {
            print!("{}", stackbench_record::json_schema::record_schema_text());
            std::process::exit(exit::OK);
        }
        Some("backends") => {
            print!("{}", stackbench_engine::matrix::page());
            std::process::exit(exit::OK);
        }
        other => {
            eprintln!(
                "stackbench: error: __docs {}: unknown page: use `__docs settings`, `__docs record`, `__docs schema` or `__docs backends`",
                other.unwrap_or("(no page)")
            );
            std::process::exit(exit::USAGE);
        }
    }
}

fn main() {
    if stackbench_guest::is_guest_init() {
        stackbench_guest::guest_init_main()
    }
    tls_proxy_or_continue();
    guest_step_or_continue();
    docs_or_continue();
    quiet_broken_pipe();
    let cli = parse_or_exit();
    let result = match cli.command {
        Command::Run(args) => run_cmd::run(args),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Agent(args) => agent_cmd::run(args),
        Command::Plan(args) => plan_cmd::run(args),
        Command::Results(args) => results_cmd::run(args),
        Command::Compare(args) => compare_cmd::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Study(args) => study_cmd::run(args),
        Command::Lab(args) => lab_cmd::run(args),
        Command::Guest(args) => guest_cmd::run(args),
        Command::K8s(args) => k8s_cmd::run(args),
        Command::Applicability(args) => applicability_cmd::run(args),
        Command::Completions(args) => completions_cmd::run(args, Cli::command()),
        Command::Man(args) => man_cmd::run(args, Cli::command()),
    };
    std::process::exit(exit::code_for(result));
}

/// The command line, or exit: help and version print as usual (status 0);
/// every clap error is one line on stderr, status 2 (see [`clap_error`]).
fn parse_or_exit() -> Cli {
    let args: Vec<_> = std::env::args_os().collect();
    let matches = clap_error::matches_or_exit(Cli::command(), args.clone());
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| clap_error::exit(&e, &Cli::command(), &args))
}
