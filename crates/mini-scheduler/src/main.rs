//! `mini-scheduler`: a Kubernetes secondary scheduler driven by a legacy kube-scheduler Policy
//! file. Subcommands: `simulate` (the scheduling cycle over cluster files), `run`, `policy check`
//! and `policy convert` (to a KubeSchedulerConfiguration).

mod output;
mod run;

use std::fmt::Display;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use scheduler::config::ConfigVersion;
use scheduler::escape::{escape_control, escape_control_line};
use scheduler::policy::{self, FeatureGates};
use scheduler::profile::{PolicySource, Profile};
use scheduler::sim::{self, Cluster, Simulation, SimulationConfig};

/// mimalloc instead of glibc malloc: the watch/bind/event path allocates and frees many small
/// JSON and k8s-openapi objects per pod, where glibc malloc cost a large share of the CPU.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The demo cluster shipped in `config/demo-cluster.yaml`, used when `simulate` gets no input.
const DEMO_CLUSTER: &str = include_str!("../../../config/demo-cluster.yaml");
/// The sample policy shipped in `config/policy-config-file.json`.
const DEMO_POLICY: &str = include_str!("../../../config/policy-config-file.json");

/// Exit code for bad input (policy, cluster files, flags), as kube-scheduler's flag errors.
const EXIT_BAD_INPUT: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "mini-scheduler",
    version,
    about = "A Kubernetes secondary scheduler with legacy Policy support"
)]
struct Cli {
    /// Log format: `text` for people, `json` for log pipelines.
    #[arg(long, global = true, env = "MINI_SCHEDULER_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// kube-scheduler feature gates that change what a policy resolves to, as `Name=bool`
    /// pairs separated by commas; repeatable. Known: DefaultPodTopologySpread (v1.22 default
    /// true: SelectorSpreadPriority and the default profile spread with PodTopologySpread's
    /// system default constraints; false: with the SelectorSpread plugin), AllAlpha, AllBeta.
    #[arg(
        long,
        global = true,
        env = "MINI_SCHEDULER_FEATURE_GATES",
        value_name = "NAME=BOOL,...",
        action = clap::ArgAction::Append,
        value_parser = feature_gates_arg
    )]
    feature_gates: Vec<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the scheduling cycle over a cluster read from files (no API server).
    ///
    /// With no input flags it schedules the bundled demo cluster with the bundled policy.
    Simulate(SimulateArgs),
    /// Run the scheduler against a Kubernetes API server (leader-elected, watching, binding).
    Run(run::RunArgs),
    /// Policy file tools.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
}

#[derive(Subcommand, Debug)]
enum PolicyCommand {
    /// Decode and validate a Policy file; print the resolved filter and score plugins.
    /// Exit code 2 when the file is invalid.
    Check {
        /// Policy file (JSON or YAML, `kind: Policy`, `apiVersion: v1`).
        file: PathBuf,
    },
    /// Print the KubeSchedulerConfiguration a Policy file resolves to (YAML on stdout): one
    /// profile with the plugins per extension point, their weights and arguments, and the
    /// extenders. What the target version cannot express is left out with a warning on stderr
    /// naming the nearest equivalent. Exit code 2 when the Policy is invalid.
    Convert {
        /// Policy file (JSON or YAML, `kind: Policy`, `apiVersion: v1`).
        file: PathBuf,
        /// Configuration version: v1beta2 (read by kube-scheduler v1.22-v1.27), v1beta3
        /// (v1.23-v1.28) or v1 (v1.25+).
        #[arg(long = "to", default_value = "v1beta2", value_parser = ["v1beta2", "v1beta3", "v1"])]
        to: String,
        /// schedulerName of the profile: pods with this spec.schedulerName use it.
        #[arg(long, default_value = "mini-scheduler")]
        scheduler_name: String,
    },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum OutputFormat {
    Table,
    Json,
}

#[derive(clap::Args, Debug)]
struct SimulateArgs {
    /// Cluster file as `kubectl get -o yaml` prints it (multi-document YAML or a v1 List of
    /// Nodes, Pods, Services, ReplicationControllers, ReplicaSets, StatefulSets, Namespaces,
    /// PersistentVolumes, PersistentVolumeClaims, StorageClasses and CSINodes; other kinds are
    /// ignored with a warning). Repeatable.
    #[arg(long = "cluster", value_name = "FILE")]
    cluster: Vec<PathBuf>,
    /// Policy file; defaults to the bundled config/policy-config-file.json.
    #[arg(long = "policy", value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Pods whose spec.schedulerName is this (or unset) are scheduled.
    #[arg(long, default_value = "mini-scheduler")]
    scheduler_name: String,
    /// Seed of the random tie-break among equally scored nodes.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// percentageOfNodesToScore: 0 = adaptive (kube-scheduler's default), 100 = all nodes.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(i32).range(0..=100))]
    percentage_of_nodes_to_score: i32,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    output: OutputFormat,
    /// Show, per pod, every node's filter failures and plugin scores.
    #[arg(long)]
    explain: bool,
    /// openb node list CSV (Alibaba cluster-trace-gpu-v2023 `openb_node_list_*.csv`).
    #[arg(long, value_name = "CSV")]
    openb_nodes: Option<PathBuf>,
    /// openb pod list CSV (`openb_pod_list_*.csv`); its pods are pending for --scheduler-name.
    #[arg(long, value_name = "CSV")]
    openb_pods: Option<PathBuf>,
}

/// Prints `error: <message>` on stderr, control characters of input values escaped. A closed
/// stderr is not an error of its own (`eprintln!` would panic).
fn print_error(message: impl Display) {
    let text = format!("error: {message}");
    let _ = writeln!(io::stderr(), "{}", escape_control(&text));
}

/// How a command that wrote to stdout ends: a reader that closed the pipe early (`… | head -1`)
/// ends the command quietly with success, as `ripgrep` and other Rust command-line tools do
/// (Rust ignores SIGPIPE, so the write fails with `BrokenPipe` instead of killing the process
/// the way it kills `cat`); any other write error is reported, exit code 1.
fn finish_output(written: io::Result<()>) -> ExitCode {
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            print_error(format_args!("writing output: {e}"));
            ExitCode::FAILURE
        }
    }
}

/// One `--feature-gates` value, checked on its own (the values are merged in order, as
/// pflag does with repeated flags: the last value of a gate wins).
fn feature_gates_arg(v: &str) -> Result<String, policy::FeatureGateError> {
    v.parse::<FeatureGates>().map(|_| v.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let gates = match cli.feature_gates.join(",").parse::<FeatureGates>() {
        Ok(g) => g,
        Err(e) => {
            print_error(format_args!("--feature-gates: {e}"));
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    if cli.log_format == LogFormat::Json {
        builder.json().init();
    } else {
        builder.with_ansi(std::io::stderr().is_terminal()).init();
    }
    match cli.command {
        Command::Run(args) => match tokio::runtime::Runtime::new() {
            Ok(rt) => rt.block_on(run::run(args, &gates)),
            Err(e) => {
                print_error(format_args!("starting the async runtime: {e}"));
                ExitCode::FAILURE
            }
        },
        Command::Policy {
            command: PolicyCommand::Check { file },
        } => policy_check(&file, &gates),
        Command::Policy {
            command:
                PolicyCommand::Convert {
                    file,
                    to,
                    scheduler_name,
                },
        } => policy_convert(&file, &to, &scheduler_name, &gates),
        Command::Simulate(args) => simulate(args, &gates),
    }
}

/// The profile of `source` under `gates` ([`Profile::load`]), its warnings logged; on error
/// the message is printed and the exit code is [`EXIT_BAD_INPUT`]. Every subcommand loads its
/// policy through here.
fn load_profile_or_exit(
    source: PolicySource<'_>,
    gates: &FeatureGates,
) -> Result<Profile, ExitCode> {
    match Profile::load(source, gates) {
        Ok((profile, warnings)) => {
            for w in &warnings {
                tracing::warn!("{}", escape_control_line(w));
            }
            Ok(profile)
        }
        Err(e) => {
            print_error(e);
            Err(ExitCode::from(EXIT_BAD_INPUT))
        }
    }
}

fn policy_check(file: &std::path::Path, gates: &FeatureGates) -> ExitCode {
    // Decoded, validated and built (plugins, extender URLs and TLS material) as `run` does.
    match load_profile_or_exit(PolicySource::File(file), gates) {
        Ok(profile) => {
            let text = format!("{}: valid\n{}\n", file.display(), profile.policy);
            finish_output(
                io::stdout()
                    .lock()
                    .write_all(escape_control(&text).as_bytes()),
            )
        }
        Err(code) => code,
    }
}

fn policy_convert(
    file: &PathBuf,
    to: &str,
    scheduler_name: &str,
    gates: &FeatureGates,
) -> ExitCode {
    let version = match to.parse::<ConfigVersion>() {
        Ok(v) => v,
        Err(e) => {
            print_error(format_args!("--to: {e}"));
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    // Decoded, validated and built (plugins, extender URLs and TLS material) as `policy check`
    // does; the conversion also needs the decoded document, so it is loaded here directly.
    let mut loaded = match scheduler::policy::load_policy_file(file) {
        Ok(l) => l,
        Err(e) => {
            print_error(e);
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    for w in &loaded.warnings {
        tracing::warn!("{}", escape_control_line(w));
    }
    loaded.resolved = loaded.resolved.with_feature_gates(gates);
    if let Err(e) = Profile::from_resolved(loaded.resolved.clone(), &file.display().to_string()) {
        print_error(e);
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let source = file.display().to_string();
    let conversion =
        match scheduler::config::convert_policy(&loaded, &source, version, scheduler_name) {
            Ok(c) => c,
            Err(e) => {
                print_error(e);
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        };
    for w in &conversion.warnings {
        let _ = writeln!(io::stderr(), "warning: {}", escape_control_line(w));
    }
    // serde_yaml quotes and escapes control characters itself.
    finish_output(
        io::stdout()
            .lock()
            .write_all(conversion.to_yaml().as_bytes()),
    )
}

fn simulate(args: SimulateArgs, gates: &FeatureGates) -> ExitCode {
    let source = match &args.policy {
        Some(p) => PolicySource::File(p),
        None => PolicySource::Text {
            name: "config/policy-config-file.json (bundled)",
            text: DEMO_POLICY,
        },
    };
    let profile = match load_profile_or_exit(source, gates) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let mut cluster = Cluster::default();
    let read = (|| -> Result<(), sim::SimError> {
        if args.cluster.is_empty() && args.openb_nodes.is_none() && args.openb_pods.is_none() {
            sim::files::parse_cluster_text(
                &mut cluster,
                "config/demo-cluster.yaml (bundled)",
                DEMO_CLUSTER,
            )?;
        }
        for f in &args.cluster {
            sim::files::read_cluster_file(&mut cluster, f)?;
        }
        if let Some(f) = &args.openb_nodes {
            sim::openb::read_nodes(&mut cluster, f)?;
        }
        if let Some(f) = &args.openb_pods {
            sim::openb::read_pods(&mut cluster, f, &args.scheduler_name)?;
        }
        Ok(())
    })();
    if let Err(e) = read {
        print_error(e);
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let cfg = SimulationConfig {
        scheduler_name: args.scheduler_name.clone(),
        seed: args.seed,
        percentage_of_nodes_to_score: args.percentage_of_nodes_to_score,
        explain: args.explain,
    };
    let mut run = match Simulation::new(cluster, &profile, &cfg) {
        Ok(r) => r,
        Err(e) => {
            print_error(e);
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    for w in run.warnings() {
        tracing::warn!("{}", escape_control_line(w));
    }
    // Pods are written as they are scheduled (see `output`).
    finish_output(match args.output {
        OutputFormat::Json => output::print_json(&mut run),
        OutputFormat::Table => output::print_table(&mut run),
    })
}
