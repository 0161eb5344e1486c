//! `mini-scheduler`: a Kubernetes secondary scheduler driven by a legacy kube-scheduler Policy
//! file. Subcommands: `simulate` (the scheduling cycle over cluster files), `run`, `policy check`
//! and `policy convert` (to a KubeSchedulerConfiguration), `explain` (why a pod of the live
//! cluster is pending), `completion` (shell completions).

mod flags;
mod live;
mod logging;
mod output;
mod run;
mod serving;

use std::fmt::Display;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use logging::LogFormat;

use scheduler::config::ConfigVersion;
use scheduler::escape::{escape_control, escape_control_line};
use scheduler::policy::{self, FeatureGates};
use scheduler::profile::{LoadedProfile, PolicySource, Profile, SchedulerProfile};
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

/// `--version`: the crate version, then the git commit and build date (`build.rs`; `unknown`
/// when built without `.git`, as in the Docker build) and the Policy API reproduced.
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\nGit commit: ",
    env!("MINI_SCHEDULER_GIT_COMMIT"),
    "\nBuild date: ",
    env!("MINI_SCHEDULER_BUILD_DATE"),
    "\nPolicy API: kube-scheduler v1.22"
);

/// Pods to schedule from which `simulate` draws a progress bar (on a terminal stderr).
const PROGRESS_MIN_PODS: usize = 1000;

#[derive(Parser, Debug)]
#[command(
    name = "mini-scheduler",
    version,
    long_version = LONG_VERSION,
    about = "A Kubernetes secondary scheduler with legacy Policy support"
)]
struct Cli {
    /// Log format, as kube-scheduler's flag: `text` for people, `json` (one object a line)
    /// for log pipelines.
    #[arg(
        long,
        global = true,
        env = "MINI_SCHEDULER_LOGGING_FORMAT",
        value_enum,
        value_name = "FORMAT"
    )]
    logging_format: Option<LogFormat>,
    /// Deprecated name of --logging-format (kept working, with a warning).
    #[arg(
        long,
        global = true,
        hide = true,
        env = "MINI_SCHEDULER_LOG_FORMAT",
        value_enum,
        conflicts_with = "logging_format"
    )]
    log_format: Option<LogFormat>,
    /// Log verbosity, klog's: 0 = operator events, 2 = per-pod outcomes (bindings, unschedulable
    /// pods), 4 = per-plugin detail, 6 = the API client's requests, 8+ = everything. RUST_LOG,
    /// when set, takes precedence.
    #[arg(
        short = 'v',
        long = "v",
        global = true,
        value_name = "LEVEL",
        default_value_t = 0
    )]
    verbosity: u8,
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

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the scheduling cycle over a cluster read from files (no API server).
    ///
    /// With no input flags it schedules the bundled demo cluster with the bundled policy.
    Simulate(SimulateArgs),
    /// Run the scheduler against a Kubernetes API server (leader-elected, watching, binding).
    Run(Box<run::RunArgs>),
    /// Why a pod of the live cluster is pending: reads the cluster (LISTs only, nothing is
    /// written), runs the filters and scores the scheduler would, and prints each node's
    /// failure reasons in kube-scheduler's words and the nodes that fit, best first, with each
    /// plugin's score.
    Explain(ExplainArgs),
    /// Policy file tools.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Print a shell completion script on stdout, e.g.
    /// `mini-scheduler completion bash > /etc/bash_completion.d/mini-scheduler`.
    Completion {
        /// Shell the script is for.
        #[arg(value_enum)]
        shell: CompletionShell,
    },
}

/// Flags of `explain`.
#[derive(clap::Args, Debug)]
struct ExplainArgs {
    /// The pod, NAMESPACE/NAME.
    pod: String,
    /// Path to a kubeconfig; without it the in-cluster configuration (or $KUBECONFIG).
    #[arg(long, env = "MINI_SCHEDULER_KUBECONFIG", value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// The Policy the scheduler runs with (default: kube-scheduler v1.22's DefaultProvider,
    /// as `run` without --policy-config-file).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// A KubeSchedulerConfiguration instead of a Policy: the profile named by the pod's
    /// spec.schedulerName (else the first) explains it.
    #[arg(long, value_name = "FILE", conflicts_with = "policy")]
    config: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    output: OutputFormat,
}

/// Shells of `completion`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum CompletionShell {
    Bash,
    Zsh,
    Fish,
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
    /// Policy file; defaults to the bundled config/policy-config-file.json. Repeatable: with
    /// two or more, each policy schedules its own copy of the cluster and a side-by-side table
    /// compares them (each pod's node, scheduled and unschedulable counts, allocation per
    /// resource, imbalance).
    #[arg(long = "policy", value_name = "FILE")]
    policy: Vec<PathBuf>,
    /// Read the cluster from the API server of this kubeconfig (LISTs only, nothing written)
    /// instead of files: a what-if run on a snapshot of the live cluster.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cluster", "openb_nodes", "openb_pods"])]
    kubeconfig: Option<PathBuf>,
    /// KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1beta2, v1beta3 or v1)
    /// instead of a Policy: each profile schedules the pods whose spec.schedulerName names it
    /// (pods without one, and the openb pods, go to the first profile).
    #[arg(long = "config", value_name = "FILE", conflicts_with_all = ["policy", "scheduler_name", "percentage_of_nodes_to_score", "parallelism"])]
    config: Option<PathBuf>,
    /// Pods whose spec.schedulerName is this (or unset) are scheduled.
    #[arg(long, default_value = "mini-scheduler")]
    scheduler_name: String,
    /// Seed of the random tie-break among equally scored nodes.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// percentageOfNodesToScore: 0 = adaptive (kube-scheduler's default), 100 = all nodes.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(i32).range(0..=100))]
    percentage_of_nodes_to_score: i32,
    /// parallelism: workers that filter and score the nodes of a cycle (kube-scheduler's
    /// default 16; at most the machine's cores run at once; 1 = one thread). Placements are the
    /// same for any value.
    #[arg(long, default_value_t = scheduler::schedule_one::DEFAULT_PARALLELISM, value_parser = run::parse_parallelism)]
    parallelism: usize,
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
    #[command(flatten)]
    replay: ReplayArgs,
}

/// The FGD paper's replay method (see the README's GPU placement section).
#[derive(clap::Args, Debug)]
struct ReplayArgs {
    /// Sort the pending pods by name, then shuffle them with this seed (the queue keeps that
    /// order).
    #[arg(long, value_name = "N")]
    shuffle_seed: Option<u64>,
    /// Append clones `<name>-tuned-<i>` of pods drawn at random until the total GPU request
    /// passes F × the cluster's GPU capacity (below the pods' own total: remove random pods).
    #[arg(long, value_name = "F")]
    inflate: Option<f64>,
    /// Write a CSV row per pod tried: pod, arrived, allocated, capacity and fragment milli-GPU.
    #[arg(long, value_name = "FILE")]
    timeline: Option<PathBuf>,
    /// Among equally scored nodes pick at random (kube-scheduler), the lowest node name, or the
    /// first in a pseudo-random order of the node names fixed by --seed (the FGD paper's
    /// simulator: a first-fit over a shuffled node list).
    #[arg(long, value_enum, default_value_t = TieBreakArg::Random)]
    tie_break: TieBreakArg,
}

/// `--tie-break` of `simulate` and `run`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum TieBreakArg {
    /// At random with the seeded RNG (kube-scheduler's selectHost).
    Random,
    /// The lowest node name.
    NodeName,
    /// The first node of a seeded pseudo-random order of the node names.
    NodeOrder,
}

impl TieBreakArg {
    /// The tie-break, `seed` fixing the order of [`TieBreakArg::NodeOrder`].
    pub(crate) fn tie_break(self, seed: u64) -> scheduler::schedule_one::TieBreak {
        use scheduler::schedule_one::TieBreak;
        match self {
            TieBreakArg::Random => TieBreak::Random,
            TieBreakArg::NodeName => TieBreak::NodeName,
            TieBreakArg::NodeOrder => TieBreak::NodeOrder(seed),
        }
    }
}

impl ReplayArgs {
    fn options(&self, seed: u64) -> sim::replay::ReplayOptions {
        sim::replay::ReplayOptions {
            shuffle_seed: self.shuffle_seed,
            inflate: self.inflate,
            tie_break: self.tie_break.tie_break(seed),
            timeline: self.timeline.is_some(),
        }
    }
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
    let format = cli
        .logging_format
        .or(cli.log_format)
        .unwrap_or(LogFormat::Text);
    logging::init(format, cli.verbosity);
    if cli.log_format.is_some() {
        // pflag's wording for a deprecated flag.
        tracing::warn!("Flag --log-format has been deprecated, use --logging-format instead");
    }
    match cli.command {
        Command::Completion { shell } => completion(shell),
        Command::Run(args) => {
            let workers = match flags::runtime_workers(
                std::env::var_os(flags::TOKIO_WORKER_THREADS).as_deref(),
            ) {
                Ok(n) => n,
                Err(e) => {
                    print_error(e);
                    return ExitCode::from(EXIT_BAD_INPUT);
                }
            };
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .enable_all()
                .build();
            match rt {
                // The scheduler runs as a task on the runtime's workers, not on `block_on`'s
                // own thread: the scheduling loop then shares a worker with the watch, binding
                // and connection tasks it exchanges a message with for every pod, instead of
                // the runtime waking a separately parked thread (a futex wake and a context
                // switch) for each.
                Ok(rt) => rt.block_on(async move {
                    match tokio::spawn(async move { run::run(*args, &gates).await }).await {
                        Ok(code) => code,
                        Err(e) => {
                            print_error(format_args!("the scheduler task failed: {e}"));
                            ExitCode::FAILURE
                        }
                    }
                }),
                Err(e) => {
                    print_error(format_args!("starting the async runtime: {e}"));
                    ExitCode::FAILURE
                }
            }
        }
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
        Command::Explain(args) => live::explain(args, &gates),
    }
}

/// `mini-scheduler completion SHELL`: clap_complete's script for the whole command tree.
fn completion(shell: CompletionShell) -> ExitCode {
    let shell = match shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "mini-scheduler", &mut script);
    finish_output(io::stdout().lock().write_all(&script))
}

/// The profile of `source` under `gates` ([`Profile::load`]), its warnings logged; on error
/// the message is printed and the exit code is [`EXIT_BAD_INPUT`]. Every subcommand loads its
/// policy through here.
fn load_profile_or_exit(
    source: PolicySource<'_>,
    gates: &FeatureGates,
) -> Result<LoadedProfile, ExitCode> {
    match Profile::load(source, gates) {
        Ok(loaded) => {
            for w in loaded.warnings() {
                tracing::warn!("{}", escape_control_line(w));
            }
            Ok(loaded)
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
        Ok(l) => {
            let text = format!("{}: valid\n{}\n", file.display(), l.profile.policy);
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
    file: &std::path::Path,
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
    // The Policy must build into a profile, as `policy check` requires.
    // A file always loads a document (`policy` is `None` for the DefaultProvider only).
    let loaded = match load_profile_or_exit(PolicySource::File(file), gates) {
        Ok(LoadedProfile {
            policy: Some(l), ..
        }) => l,
        Ok(_) => return ExitCode::FAILURE,
        Err(code) => return code,
    };
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

/// The profiles of `simulate`: the configuration's (`--config`), or one from the Policy.
fn simulate_profiles(
    args: &SimulateArgs,
    policy: Option<&std::path::Path>,
    gates: &FeatureGates,
) -> Result<(Vec<SchedulerProfile>, i32, usize), ExitCode> {
    if let Some(path) = &args.config {
        let loaded = scheduler::config::load_config_file(path).map_err(|e| {
            print_error(e);
            ExitCode::from(EXIT_BAD_INPUT)
        })?;
        for w in &loaded.warnings {
            tracing::warn!("{}", escape_control_line(w));
        }
        // Each profile builds like a Policy's (plugins, then extenders).
        let profiles = SchedulerProfile::from_config(&loaded, &path.display().to_string())
            .map_err(|e| {
                print_error(e);
                ExitCode::from(EXIT_BAD_INPUT)
            })?;
        return Ok((
            profiles,
            loaded.percentage_of_nodes_to_score,
            loaded.parallelism(),
        ));
    }
    let source = match policy {
        Some(p) => PolicySource::File(p),
        None => PolicySource::Text {
            name: "config/policy-config-file.json (bundled)",
            text: DEMO_POLICY,
        },
    };
    let profile = load_profile_or_exit(source, gates)?.profile;
    Ok((
        vec![SchedulerProfile {
            scheduler_name: args.scheduler_name.clone(),
            profile,
            percentage_of_nodes_to_score: None,
        }],
        args.percentage_of_nodes_to_score,
        args.parallelism,
    ))
}

/// The progress bar of a `simulate` run deciding `pods` pods: drawn on stderr when stderr is a
/// terminal, stdout is not (the rows on a terminal stdout are the progress) and the run has at
/// least [`PROGRESS_MIN_PODS`] pods; hidden (every call a no-op) otherwise.
fn progress_bar(pods: usize) -> indicatif::ProgressBar {
    if pods < PROGRESS_MIN_PODS || !io::stderr().is_terminal() || io::stdout().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(pods as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{elapsed_precise} [{wide_bar}] {pos}/{len} pods ({per_sec}, ETA {eta})",
    ) {
        bar.set_style(style);
    }
    bar
}

fn simulate(args: SimulateArgs, gates: &FeatureGates) -> ExitCode {
    let (profiles, percentage_of_nodes_to_score, parallelism) =
        match simulate_profiles(&args, args.policy.first().map(PathBuf::as_path), gates) {
            Ok(p) => p,
            Err(code) => return code,
        };
    // openb pods (which carry no schedulerName of their own) are the first profile's.
    let openb_scheduler = profiles
        .first()
        .map_or(args.scheduler_name.clone(), |p| p.scheduler_name.clone());
    let mut cluster = Cluster::default();
    let live = match &args.kubeconfig {
        Some(path) => match live::live_snapshot(Some(path)) {
            Ok(s) => Some(s),
            Err(code) => return code,
        },
        None => None,
    };
    let read = (|| -> Result<(), sim::SimError> {
        if let Some((text, server)) = &live {
            sim::files::parse_cluster_text(&mut cluster, server, text)?;
        } else if args.cluster.is_empty() && args.openb_nodes.is_none() && args.openb_pods.is_none()
        {
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
            sim::openb::read_pods(&mut cluster, f, &openb_scheduler)?;
        }
        Ok(())
    })();
    if let Err(e) = read {
        print_error(e);
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    if args.policy.len() > 1 {
        return live::compare_policies(&args, cluster, gates);
    }
    let cfg = SimulationConfig {
        scheduler_name: args.scheduler_name.clone(),
        seed: args.seed,
        percentage_of_nodes_to_score,
        explain: args.explain,
    };
    let mut run = match Simulation::with_profiles_replay(
        cluster,
        profiles,
        &cfg,
        args.replay.options(args.seed),
    ) {
        Ok(r) => r,
        Err(e) => {
            print_error(e);
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    run.set_parallelism(parallelism);
    for w in run.warnings() {
        tracing::warn!("{}", escape_control_line(w));
    }
    // Pods are written as they are scheduled (see `output`).
    let progress = progress_bar(run.size_hint().0);
    let code = finish_output(match args.output {
        OutputFormat::Json => output::print_json(&mut run, &progress),
        OutputFormat::Table => output::print_table(&mut run, &progress),
    });
    progress.finish_and_clear();
    if let (Some(path), Some(rows)) = (&args.replay.timeline, run.timeline()) {
        let written = std::fs::File::create(path).and_then(|f| {
            let mut w = io::BufWriter::new(f);
            sim::replay::write_timeline_csv(&mut w, rows)?;
            w.flush()
        });
        if let Err(e) = written {
            print_error(format_args!("--timeline {}: {e}", path.display()));
            return ExitCode::FAILURE;
        }
    }
    code
}
