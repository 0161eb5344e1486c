//! Rust twin of client-go's leader-election example (examples/leader-election/main.go).
//!
//! ```text
//! cargo run -p election --example elect -- --kubeconfig ~/.kube/config \
//!     --lease-lock-name example --lease-lock-namespace default --id 1
//! ```
//!
//! Run several copies with different `--id`s: the leader prints `Controller loop...` every few
//! seconds, the others print `new leader elected: <id>`. Ctrl-C (SIGINT) or SIGTERM (how the
//! kubelet stops a pod) releases the lease, as client-go's example does for `os.Interrupt` and
//! `syscall.SIGTERM`, so another copy, watching the Lease, takes over within milliseconds
//! (client-go's example polls: up to 2.2 retry periods) instead of waiting out the lease. Like
//! client-go's example it uses a 60 s lease, a 15 s renew deadline and a 5 s retry period.

use std::future::Future;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use election::{
    ElectionMetrics, ElectionOutcome, KubeLeaseLock, LeaderElectionConfig, LeaderElector,
    default_identity,
};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Command-line flags (client-go example's names).
#[derive(Debug, Parser)]
#[command(about = "Leader-election example: prints while it leads, releases on Ctrl-C or SIGTERM")]
struct Args {
    /// Path to a kubeconfig; when absent, in-cluster config or $KUBECONFIG is inferred.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The Lease name.
    #[arg(long)]
    lease_lock_name: String,
    /// The Lease namespace.
    #[arg(long)]
    lease_lock_namespace: String,
    /// The holder identity; defaults to `<pod or host name>_<uuid>`.
    #[arg(long)]
    id: Option<String>,
}

async fn client(kubeconfig: Option<&PathBuf>) -> Result<kube::Client, Box<dyn std::error::Error>> {
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        None => kube::Config::infer().await?,
    };
    Ok(kube::Client::try_from(config)?)
}

/// Resolves on the first SIGTERM or SIGINT (Ctrl-C), like client-go's example's
/// `signal.Notify(ch, os.Interrupt, syscall.SIGTERM)`. The handlers are installed by this call,
/// not on first poll, so a signal that arrives while the client is still being built is not
/// lost (nor does it kill the process without the release).
///
/// # Errors
/// The I/O error of installing a signal handler.
fn termination() -> std::io::Result<impl Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = interrupt.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}

#[tokio::main]
async fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let terminated = termination()?;
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let args = Args::parse();
    let id = args.id.clone().unwrap_or_else(default_identity);
    let client = client(args.kubeconfig.as_ref()).await?;

    let config = LeaderElectionConfig {
        lease_duration: Duration::from_secs(60),
        renew_deadline: Duration::from_secs(15),
        retry_period: Duration::from_secs(5),
        identity: id.clone(),
        lease_name: args.lease_lock_name.clone(),
        lease_namespace: args.lease_lock_namespace.clone(),
        release_on_cancel: true,
    };
    let lock = KubeLeaseLock::new(client, &config.lease_namespace, &config.lease_name);
    let registry = prometheus::Registry::new();
    let elector = LeaderElector::new(config, lock, ElectionMetrics::new(&registry)?)?;
    let watch = elector.watch();

    // OnNewLeader.
    let mut holder = watch.holder();
    let me = id.clone();
    tokio::spawn(async move {
        while holder.changed().await.is_ok() {
            let current = holder.borrow_and_update().clone();
            match current {
                Some(h) if h == me => {} // we just got the lock
                Some(h) if !h.is_empty() => println!("new leader elected: {h}"),
                _ => {}
            }
        }
    });

    // OnStartedLeading: the "controller", fenced by the guard.
    let leading = watch.clone();
    let me = id.clone();
    tokio::spawn(async move {
        let Some(guard) = leading.wait_for_leadership().await else {
            return;
        };
        println!("{me}: started leading");
        loop {
            if guard.check().is_err() {
                break;
            }
            println!("Controller loop...");
            tokio::select! {
                () = guard.lost() => break,
                () = tokio::time::sleep(Duration::from_secs(5)) => {}
            }
        }
    });

    let outcome = elector
        .run(async {
            terminated.await;
            println!("Received termination, signaling shutdown");
        })
        .await;

    // OnStoppedLeading.
    println!("leader lost: {id}");
    Ok(match outcome {
        ElectionOutcome::LeadershipLost(reason) => {
            eprintln!("leadership lost: {reason}");
            ExitCode::FAILURE
        }
        ElectionOutcome::ShutdownWhileLeading { .. }
        | ElectionOutcome::ShutdownWhileFollowing { .. } => ExitCode::SUCCESS,
    })
}
