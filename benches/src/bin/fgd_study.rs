//! The GPU placement study: the FGD paper's comparison (Weng et al., USENIX ATC'23) rerun
//! through `simulate`'s replay method — every policy × seeds 42–51 × the 17 openb traces, in
//! parallel — written as a CSV, a Markdown table and two SVG charts (unallocated GPU % vs arrived
//! workload on the default trace; the 17 traces at 100 % arrived beside the authors' values).
//!
//! ```sh
//! cargo run --release -p benches --bin fgd_study            # writes docs/gpu-study/
//! cargo run --release -p benches --bin fgd_study -- --traces default --seeds 42-43
//! cargo run --release -p benches --bin fgd_study -- --resume   # finish an interrupted study
//! ```
//!
//! Each run: the GPU node list, one pod list, the policy file `config/policies/gpu/<p>.yaml`,
//! `--percentage-of-nodes-to-score 100 --shuffle-seed S --seed S --inflate 1.3 --tie-break
//! node-order`: ties go to the first node of a pseudo-random node order fixed by the seed, as in
//! the paper's simulator (it renames every node with a seeded random rank, then takes the lowest
//! name; `docs/gpu-study/authors-simulator.md`), except for Random, which breaks them at random;
//! no preemption (the paper drops a pod that fits nowhere; `DefaultPreemption` is disabled).
#![allow(clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use clap::Parser;
use plotters::prelude::*;

use std::collections::HashMap;

use scheduler::model::PodInfo;
use scheduler::policy::{self, DefaultPreemptionArgs, ResolvedPolicy};
use scheduler::profile::Profile;
use scheduler::schedule_one::TieBreak;
use scheduler::sim::replay::{
    FailureCause, ReplayOptions, UnallocatedBreakdown, failure_cause, gpu_request_milli,
    unallocated_at, unallocated_by_model,
};
use scheduler::sim::{self, Cluster, Simulation, SimulationConfig};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The 17 traces of the paper's figures, in the order of its table.
const TRACES: &[&str] = &[
    "default",
    "cpu050",
    "cpu100",
    "cpu200",
    "cpu250",
    "gpushare40",
    "gpushare60",
    "gpushare80",
    "gpushare100",
    "multigpu20",
    "multigpu30",
    "multigpu40",
    "multigpu50",
    "gpuspec10",
    "gpuspec20",
    "gpuspec25",
    "gpuspec33",
];

/// Policy file stem, display name, the authors' `sc_policy` (none for ours), tie-break (a
/// `NodeOrder` seed is replaced by the run's seed): the paper's six, then ours.
const POLICIES: &[(&str, &str, Option<&str>, TieBreak)] = &[
    ("random", "Random", Some("01-Random"), TieBreak::Random),
    (
        "dot-product",
        "DotProd",
        Some("02-DotProd"),
        TieBreak::NodeOrder(0),
    ),
    (
        "gpu-clustering",
        "GpuClustering",
        Some("03-GpuClustering"),
        TieBreak::NodeOrder(0),
    ),
    (
        "gpu-packing",
        "GpuPacking",
        Some("04-GpuPacking"),
        TieBreak::NodeOrder(0),
    ),
    (
        "best-fit",
        "BestFit",
        Some("05-BestFit"),
        TieBreak::NodeOrder(0),
    ),
    ("fgd", "FGD", Some("06-FGD"), TieBreak::NodeOrder(0)),
    // Ours: FGD, CPU-only pods packed where the GPUs are taken.
    (
        "fgd-cpu-packing",
        "FGD-CpuPacking",
        None,
        TieBreak::NodeOrder(0),
    ),
    // Ours, second version: the fragment also counts CPU/memory stranding by instances.
    (
        "fgd-instances",
        "FGD-Instances",
        None,
        TieBreak::NodeOrder(0),
    ),
];

/// Arrived workload grid of the results, % of GPU capacity.
const GRID_MAX: usize = 130;

#[derive(Parser, Debug)]
#[command(about = "Rerun the FGD paper's GPU placement comparison on the openb traces")]
struct Args {
    /// Directory of the openb CSVs.
    #[arg(long, default_value = "data/openb")]
    data: PathBuf,
    /// The authors' results (`analysis_allo_discrete.csv`).
    #[arg(long, default_value = "data/fgd-expected-results")]
    expected: PathBuf,
    /// Directory of the policy files `<policy>.yaml`.
    #[arg(long, default_value = "config/policies/gpu")]
    policies_dir: PathBuf,
    /// Output directory (CSV, Markdown table, SVG charts).
    #[arg(long, default_value = "docs/gpu-study")]
    out: PathBuf,
    /// Traces, comma-separated (default: the paper's 17).
    #[arg(long, value_delimiter = ',')]
    traces: Vec<String>,
    /// Policy file stems, comma-separated (default: the paper's six and ours, `fgd-cpu-packing` and
    /// `fgd-instances`).
    #[arg(long, value_delimiter = ',')]
    policies: Vec<String>,
    /// Seeds as `FIRST-LAST`.
    #[arg(long, default_value = "42-51")]
    seeds: String,
    /// Inflation factor (the paper's tune).
    #[arg(long, default_value_t = 1.3)]
    inflate: f64,
    /// Worker threads (default: the available cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Keep the runs already in `<out>/study.csv` (each run is appended there as it finishes)
    /// and run only the missing ones: an interrupted study picks up where it stopped.
    #[arg(long)]
    resume: bool,
    /// Break score ties this way for every policy (default: the seeded node order, Random at
    /// random).
    #[arg(long, value_parser = ["random", "node-name", "node-order"])]
    tie_break: Option<String>,
    /// Also diagnose each run at the first pod that takes the arrived workload to 100 %: where
    /// the unallocated GPU sits (`UnallocatedBreakdown`: GPU model, device shape, CPU, memory,
    /// usable) and why the GPU pods that failed until then fitted nowhere (`FailureCause`), by
    /// pod size; written to `<out>/unallocated.md`, means over the seeds.
    #[arg(long)]
    explain_unallocated: bool,
}

/// One run's results.
#[derive(Debug, Clone)]
struct RunResult {
    trace: String,
    policy: String,
    seed: u64,
    seconds: f64,
    pods: usize,
    failed: usize,
    /// Unallocated GPU % at arrived 0..=130 % (NaN where not reached).
    unallocated: Vec<f64>,
    /// Fragment as % of capacity at the same points.
    fragment: Vec<f64>,
    /// With `--explain-unallocated`: the diagnosis at 100 % arrived.
    explain: Option<Explain>,
}

/// The diagnosis of one run at the first row whose arrived workload reaches 100 % of capacity.
#[derive(Debug, Clone, Default)]
struct Explain {
    /// Where the unallocated GPU sits then.
    breakdown: UnallocatedBreakdown,
    /// The same per GPU model of the nodes.
    by_model: BTreeMap<String, UnallocatedBreakdown>,
    /// The pods that failed until then: (size class, cause) → (pods, milli-GPU, millicores and
    /// bytes of memory requested).
    failed: BTreeMap<(&'static str, FailureCause), (u64, u64, i64, i64)>,
}

/// Size classes of the failed pods, in the order of the report.
const SIZE_CLASSES: [&str; 6] = ["cpu-only", "share", "1 GPU", "2 GPUs", "4 GPUs", "8 GPUs"];

/// The size class of a pod's GPU demand.
fn size_class(pod: &PodInfo) -> &'static str {
    match (pod.gpu.count, pod.gpu.milli) {
        (0, _) => SIZE_CLASSES[0],
        (_, m) if m < 1000 => SIZE_CLASSES[1],
        (1, _) => SIZE_CLASSES[2],
        (2, _) => SIZE_CLASSES[3],
        (3..=4, _) => SIZE_CLASSES[4],
        _ => SIZE_CLASSES[5],
    }
}

/// The trace's pods by name, for the diagnosis of failed pods (a clone `<name>-tuned-<i>` has
/// its original's requests).
fn pods_by_name(cluster: &Cluster) -> HashMap<String, PodInfo> {
    cluster
        .pods
        .iter()
        .filter_map(|p| {
            let mut p = p.clone();
            sim::default_requests_from_limits(&mut p);
            let info = PodInfo::from_pod(p).ok()?;
            Some((info.name.clone(), info))
        })
        .collect()
}

fn policy_name(stem: &str) -> String {
    POLICIES
        .iter()
        .find(|p| p.0 == stem)
        .map_or_else(|| stem.to_string(), |p| p.1.to_string())
}

/// `--tie-break`, when given: the tie-break of every policy.
static TIE_BREAK: std::sync::OnceLock<TieBreak> = std::sync::OnceLock::new();

fn tie_break(stem: &str, seed: u64) -> TieBreak {
    let t = TIE_BREAK.get().copied().unwrap_or_else(|| {
        POLICIES
            .iter()
            .find(|p| p.0 == stem)
            .map_or(TieBreak::NodeOrder(0), |p| p.3)
    });
    match t {
        TieBreak::NodeOrder(_) => TieBreak::NodeOrder(seed),
        t => t,
    }
}

fn load_trace(data: &Path, trace: &str) -> Cluster {
    let mut c = Cluster::default();
    sim::openb::read_nodes(&mut c, &data.join("openb_node_list_gpu_node.csv"))
        .expect("reading the node list");
    sim::openb::read_pods(
        &mut c,
        &data.join(format!("openb_pod_list_{trace}.csv")),
        "mini-scheduler",
    )
    .expect("reading the pod list");
    c
}

fn run_one(
    cluster: Cluster,
    policy: &ResolvedPolicy,
    stem: &str,
    seed: u64,
    inflate: f64,
    explain_pods: Option<&HashMap<String, PodInfo>>,
) -> (f64, usize, usize, Vec<f64>, Vec<f64>, Option<Explain>) {
    let cfg = SimulationConfig {
        scheduler_name: "mini-scheduler".into(),
        seed,
        percentage_of_nodes_to_score: 100,
        explain: false,
    };
    let opts = ReplayOptions {
        shuffle_seed: Some(seed),
        inflate: Some(inflate),
        tie_break: tie_break(stem, seed),
        timeline: true,
    };
    let started = Instant::now();
    // A profile per run: the FGD scorer's memo is the run's own.
    let profile = Profile::from_resolved(policy.clone(), stem).expect("building the policy");
    let mut run = Simulation::with_replay(cluster, &profile, &cfg, opts).expect("simulation");
    let mut pods = 0;
    let mut failed = 0;
    let mut explain = explain_pods.map(|_| Explain::default());
    let mut explaining = explain.is_some();
    let mut rows_seen = 0;
    while let Some(o) = run.next() {
        pods += 1;
        let scheduled = o.status == sim::PodStatus::Scheduled;
        if !scheduled {
            failed += 1;
        }
        let (Some(ex), Some(by_name), true) = (explain.as_mut(), explain_pods, explaining) else {
            continue;
        };
        let rows = run.timeline().expect("timeline");
        if rows.len() == rows_seen {
            continue;
        }
        rows_seen = rows.len();
        let row = rows.last().expect("a row");
        if !scheduled {
            let original = o
                .name
                .rsplit_once("-tuned-")
                .map_or(o.name.as_str(), |x| x.0);
            let pod = by_name.get(original).expect("a failed pod of the trace");
            let e = ex
                .failed
                .entry((size_class(pod), failure_cause(run.snapshot(), pod)))
                .or_default();
            e.0 += 1;
            e.1 += gpu_request_milli(pod);
            e.2 += pod.requests.milli_cpu;
            e.3 += pod.requests.memory;
        }
        if row.arrived_gpu_milli >= row.capacity_gpu_milli {
            let tp = run.snapshot().typical_pods().expect("typical pods").clone();
            ex.by_model = unallocated_by_model(run.snapshot(), &tp);
            ex.breakdown = ex
                .by_model
                .values()
                .fold(UnallocatedBreakdown::default(), |a, b| a.plus(b));
            explaining = false;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let rows = run.timeline().expect("timeline");
    let unalloc = (0..=GRID_MAX)
        .map(|x| unallocated_at(rows, x as f64).unwrap_or(f64::NAN))
        .collect();
    let frag = (0..=GRID_MAX)
        .map(|x| {
            rows.iter()
                .find(|r| {
                    r.arrived_gpu_milli as f64 >= x as f64 / 100.0 * r.capacity_gpu_milli as f64
                })
                .map_or(f64::NAN, |r| {
                    100.0 * r.fragment_gpu_milli / r.capacity_gpu_milli as f64
                })
        })
        .collect();
    (seconds, pods, failed, unalloc, frag, explain)
}

/// The authors' unallocated GPU % at arrived 100 %: (trace, display policy) → per-seed values.
fn authors(expected: &Path) -> BTreeMap<(String, String), Vec<f64>> {
    let path = expected.join("analysis_allo_discrete.csv");
    let text = std::fs::read_to_string(&path).expect("reading the authors' results");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect("column");
    let (w, p, at100) = (col("workload"), col("sc_policy"), col("100"));
    let mut out: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let trace = f[w].trim_start_matches("openb_pod_list_").to_string();
        let Some(pol) = POLICIES.iter().find(|x| x.2 == Some(f[p])) else {
            continue;
        };
        if let Ok(v) = f[at100].parse::<f64>() {
            out.entry((trace, pol.1.to_string()))
                .or_default()
                .push(100.0 - v);
        }
    }
    out
}

/// The table's footer: what this invocation ran, in how much wall time, and — with `--resume` —
/// the runs it kept from an earlier `study.csv`, whose wall time this invocation did not see
/// (only the sum of their own run times is known).
fn footer(
    ran: usize,
    wall: f64,
    threads: usize,
    ran_seconds: f64,
    kept: usize,
    kept_seconds: f64,
) -> String {
    let mut f = format!(
        "\n{} runs: {ran} run by this invocation in {wall:.0} s of wall time on {threads} threads \
         ({ran_seconds:.0} s of runs summed)",
        ran + kept
    );
    if kept > 0 {
        f.push_str(&format!(
            "; {kept} kept from an earlier study.csv (--resume; {kept_seconds:.0} s of runs \
             summed, wall time not recorded)"
        ));
    }
    f.push_str(".\n");
    f
}

/// The header of `study.csv`.
fn csv_header() -> String {
    let mut h = String::from("trace,policy,seed,seconds,pods,failed");
    for x in 0..=GRID_MAX {
        h.push_str(&format!(",unalloc_{x}"));
    }
    for x in FRAG_POINTS {
        h.push_str(&format!(",frag_{x}"));
    }
    h.push('\n');
    h
}

/// Arrived points whose fragmentation `study.csv` keeps.
const FRAG_POINTS: [usize; 3] = [75, 100, 130];

/// One `study.csv` row.
fn csv_row(r: &RunResult) -> String {
    let mut row = format!(
        "{},{},{},{:.3},{},{}",
        r.trace, r.policy, r.seed, r.seconds, r.pods, r.failed
    );
    for v in &r.unallocated {
        row.push_str(&format!(",{v:.4}"));
    }
    for x in FRAG_POINTS {
        row.push_str(&format!(",{:.4}", r.fragment[x]));
    }
    row.push('\n');
    row
}

/// The runs of an earlier `study.csv` (rows that do not parse are skipped, to be rerun).
fn read_runs(path: &Path) -> Vec<RunResult> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() != 6 + GRID_MAX + 1 + FRAG_POINTS.len() {
                return None;
            }
            let num = |s: &str| s.parse::<f64>().ok();
            let unallocated = f[6..6 + GRID_MAX + 1]
                .iter()
                .map(|s| num(s))
                .collect::<Option<Vec<f64>>>()?;
            let mut fragment = vec![f64::NAN; GRID_MAX + 1];
            for (k, x) in FRAG_POINTS.iter().enumerate() {
                fragment[*x] = num(f[6 + GRID_MAX + 1 + k])?;
            }
            Some(RunResult {
                trace: f[0].to_string(),
                policy: f[1].to_string(),
                seed: f[2].parse().ok()?,
                seconds: num(f[3])?,
                pods: f[4].parse().ok()?,
                failed: f[5].parse().ok()?,
                unallocated,
                fragment,
                explain: None,
            })
        })
        .collect()
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
    } else {
        0.0
    };
    (m, var.sqrt())
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let pos = q * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

const COLORS: &[RGBColor] = &[
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(44, 160, 44),
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(214, 39, 40),
    RGBColor(23, 190, 207),
    RGBColor(127, 127, 127),
];

fn line_chart(
    path: &Path,
    results: &[RunResult],
    policies: &[String],
    seeds: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Default trace: unallocated GPU vs arrived workload (median, 25-75 % band, {seeds})"
            ),
            ("sans-serif", 18),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d(75f64..130f64, 0f64..26f64)?;
    chart
        .configure_mesh()
        .x_desc("Arrived workload (% of cluster GPU capacity)")
        .y_desc("Unallocated GPU (%)")
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            (75..=130).map(|x| (x as f64, (100.0 - x as f64).max(0.0))),
            BLACK.stroke_width(1),
        ))?
        .label("Ideal")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
    for (k, pol) in policies.iter().enumerate() {
        let runs: Vec<&RunResult> = results
            .iter()
            .filter(|r| r.trace == "default" && &r.policy == pol)
            .collect();
        if runs.is_empty() {
            continue;
        }
        let color = COLORS[k % COLORS.len()];
        let stats: Vec<(f64, f64, f64, f64)> = (75..=GRID_MAX)
            .map(|x| {
                let mut v: Vec<f64> = runs
                    .iter()
                    .map(|r| r.unallocated[x])
                    .filter(|v| v.is_finite())
                    .collect();
                (
                    x as f64,
                    quantile(&mut v, 0.25),
                    quantile(&mut v, 0.5),
                    quantile(&mut v, 0.75),
                )
            })
            .collect();
        let mut band: Vec<(f64, f64)> = stats.iter().map(|s| (s.0, s.3)).collect();
        band.extend(stats.iter().rev().map(|s| (s.0, s.1)));
        chart.draw_series(std::iter::once(Polygon::new(band, color.mix(0.2).filled())))?;
        chart
            .draw_series(LineSeries::new(
                stats.iter().map(|s| (s.0, s.2)),
                color.stroke_width(2),
            ))?
            .label(pol.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()?;
    Ok(())
}

fn bar_chart(
    path: &Path,
    ours: &BTreeMap<(String, String), (f64, f64)>,
    theirs: &BTreeMap<(String, String), (f64, f64)>,
    traces: &[String],
    policies: &[String],
    seeds: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let per = policies.len() as f64 + 1.0;
    let width = (traces.len() as f64 * per * 24.0 + 160.0) as u32;
    let root = SVGBackend::new(path, (width.max(700), 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let ymax = ours
        .values()
        .chain(theirs.values())
        .map(|v| v.0)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
        * 1.1;
    let xmax = traces.len() as f64 * per;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Unallocated GPU at 100 % arrived, mean of {seeds}: ours (solid) beside the authors' (light, outlined; seeds 42-51)"
            ),
            ("sans-serif", 18),
        )
        .margin(15)
        .x_label_area_size(60)
        .y_label_area_size(55)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)?;
    let labels: Vec<String> = traces.to_vec();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(traces.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let i = (x / per - 0.5).round();
            if i >= 0.0 && ((x / per) - 0.5 - i).abs() < 0.05 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("Unallocated GPU (%)")
        .draw()?;
    for (k, pol) in policies.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let mut first = true;
        for (t, trace) in traces.iter().enumerate() {
            let x0 = t as f64 * per + 0.5 + k as f64;
            let key = (trace.clone(), pol.clone());
            if let Some(&(v, _)) = theirs.get(&key).filter(|v| v.0.is_finite()) {
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(x0, 0.0), (x0 + 0.45, v)],
                    color.mix(0.3).filled(),
                )))?;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(x0, 0.0), (x0 + 0.45, v)],
                    color.stroke_width(1),
                )))?;
            }
            if let Some(&(v, _)) = ours.get(&key).filter(|v| v.0.is_finite()) {
                let s = chart.draw_series(std::iter::once(Rectangle::new(
                    [(x0 + 0.45, 0.0), (x0 + 0.9, v)],
                    color.filled(),
                )))?;
                if first {
                    s.label(pol.as_str()).legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                    });
                    first = false;
                }
            }
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

/// The `--explain-unallocated` report: for each trace and policy, means over the seeds, in % of
/// the cluster's GPU capacity (pods: counts) at the first pod that takes the arrived workload to
/// 100 %.
fn explain_report(results: &[RunResult], traces: &[String], policies: &[String]) -> String {
    let mut md = String::from(
        "Diagnosis at 100 % arrived workload (the first pod that takes the arrived GPU request \
         to the cluster's capacity); means over the seeds, % of the GPU capacity.\n\n\
         **Where the unallocated GPU sits** (`UnallocatedBreakdown`, against the typical GPU \
         pods): `model` no typical GPU pod may use the node's GPU model; `shape` no typical GPU \
         pod fits the device's free share; `cpu` one fits the devices but none has its CPU on \
         the node; `memory` GPU and CPU fit, memory not; `usable` a typical pod fits entirely.\n\n\
         | trace | policy | unallocated | model | shape | cpu | memory | usable |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    let pct = |v: f64, cap: f64| 100.0 * v / cap;
    let groups: Vec<(&String, &String, Vec<&Explain>)> = traces
        .iter()
        .flat_map(|t| policies.iter().map(move |p| (t, p)))
        .map(|(t, p)| {
            let ex: Vec<&Explain> = results
                .iter()
                .filter(|r| &r.trace == t && &r.policy == p)
                .filter_map(|r| r.explain.as_ref())
                .filter(|e| e.breakdown.capacity > 0)
                .collect();
            (t, p, ex)
        })
        .filter(|g| !g.2.is_empty())
        .collect();
    let mean = |ex: &[&Explain], f: &dyn Fn(&Explain) -> f64| {
        ex.iter().map(|e| f(e)).sum::<f64>() / ex.len() as f64
    };
    for (t, p, ex) in &groups {
        let b = |f: fn(&UnallocatedBreakdown) -> u64| {
            mean(ex, &|e| {
                pct(f(&e.breakdown) as f64, e.breakdown.capacity as f64)
            })
        };
        md.push_str(&format!(
            "| {t} | {p} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |\n",
            b(|b| b.free),
            b(|b| b.model),
            b(|b| b.shape),
            b(|b| b.cpu),
            b(|b| b.memory),
            b(|b| b.usable)
        ));
    }
    md.push_str(
        "\n**The same by GPU model** (% of that model's GPU capacity; `share` is the model's \
         share of the cluster's GPUs):\n\n\
         | trace | policy | GPU model | share | unallocated | shape | cpu | memory | usable |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for (t, p, ex) in &groups {
        let models: std::collections::BTreeSet<&String> =
            ex.iter().flat_map(|e| e.by_model.keys()).collect();
        for m in models {
            let b = |f: fn(&UnallocatedBreakdown) -> u64| {
                mean(ex, &|e| {
                    e.by_model
                        .get(m)
                        .map_or(0.0, |b| pct(f(b) as f64, b.capacity.max(1) as f64))
                })
            };
            let share = mean(ex, &|e| {
                pct(
                    e.by_model.get(m).map_or(0, |b| b.capacity) as f64,
                    e.breakdown.capacity as f64,
                )
            });
            md.push_str(&format!(
                "| {t} | {p} | {m} | {share:.1} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |\n",
                b(|b| b.free),
                b(|b| b.shape),
                b(|b| b.cpu),
                b(|b| b.memory),
                b(|b| b.usable)
            ));
        }
    }
    md.push_str(
        "\n**The pods that failed until then** (`FailureCause`, judged when each failed): GPU \
         requested by the failed pods by cause — `exhausted` the GPU models it may use have less \
         free GPU in all than it asks; `fragmented` enough in all, but no node has the devices; \
         `cpu` a node has the devices, none of those the CPU; `memory` devices and CPU, not the \
         memory; `other` another check. Failed pods counted, CPU-only ones apart.\n\n\
         | trace | policy | failed GPU pods | failed CPU-only pods | failed GPU | exhausted | fragmented | cpu | memory | other |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (t, p, ex) in &groups {
        let sum = |e: &Explain, keep: &dyn Fn(&str, FailureCause) -> bool, milli: bool| {
            e.failed
                .iter()
                .filter(|((c, f), _)| keep(c, *f))
                .map(|(_, v)| if milli { v.1 } else { v.0 })
                .sum::<u64>() as f64
        };
        let cap = |e: &Explain| e.breakdown.capacity as f64;
        let gpu = |c: &str| c != SIZE_CLASSES[0];
        md.push_str(&format!(
            "| {t} | {p} | {:.1} | {:.1} | {:.2} |",
            mean(ex, &|e| sum(e, &|c, _| gpu(c), false)),
            mean(ex, &|e| sum(e, &|c, _| !gpu(c), false)),
            mean(ex, &|e| pct(sum(e, &|_, _| true, true), cap(e)))
        ));
        for cause in FailureCause::ALL {
            md.push_str(&format!(
                " {:.2} |",
                mean(ex, &|e| pct(sum(e, &|_, f| f == cause, true), cap(e)))
            ));
        }
        md.push('\n');
    }
    md.push_str(
        "\n**Failed GPU by pod size** (% of capacity; in brackets the pods, then their mean \
         CPU in cores and memory in GiB):\n\n| trace | policy |",
    );
    for c in &SIZE_CLASSES[1..] {
        md.push_str(&format!(" {c} |"));
    }
    md.push_str("\n|---|---|");
    md.push_str(&"---:|".repeat(SIZE_CLASSES.len() - 1));
    md.push('\n');
    for (t, p, ex) in &groups {
        md.push_str(&format!("| {t} | {p} |"));
        for class in &SIZE_CLASSES[1..] {
            let of = |e: &Explain, milli: bool| {
                e.failed
                    .iter()
                    .filter(|((c, _), _)| c == class)
                    .map(|(_, v)| if milli { v.1 } else { v.0 })
                    .sum::<u64>() as f64
            };
            let (pods, cpu, mem) = ex.iter().fold((0u64, 0i64, 0i64), |a, e| {
                e.failed
                    .iter()
                    .filter(|((c, _), _)| c == class)
                    .fold(a, |a, (_, v)| (a.0 + v.0, a.1 + v.2, a.2 + v.3))
            });
            let per = |v: i64, unit: f64| v as f64 / pods.max(1) as f64 / unit;
            md.push_str(&format!(
                " {:.2} ({:.1}; {:.1} c, {:.0} GiB) |",
                mean(ex, &|e| pct(of(e, true), e.breakdown.capacity as f64)),
                mean(ex, &|e| of(e, false)),
                per(cpu, 1000.0),
                per(mem, f64::from(1u32 << 30))
            ));
        }
        md.push('\n');
    }
    md
}

fn main() {
    let args = Args::parse();
    if let Some(t) = &args.tie_break {
        let _ = TIE_BREAK.set(match t.as_str() {
            "random" => TieBreak::Random,
            "node-order" => TieBreak::NodeOrder(0),
            _ => TieBreak::NodeName,
        });
    }
    let traces: Vec<String> = if args.traces.is_empty() {
        TRACES.iter().map(|s| s.to_string()).collect()
    } else {
        args.traces.clone()
    };
    let stems: Vec<String> = if args.policies.is_empty() {
        POLICIES.iter().map(|p| p.0.to_string()).collect()
    } else {
        args.policies.clone()
    };
    let (first, last) = args
        .seeds
        .split_once('-')
        .map(|(a, b)| (a.parse::<u64>(), b.parse::<u64>()))
        .and_then(|(a, b)| Some((a.ok()?, b.ok()?)))
        .unwrap_or_else(|| {
            eprintln!("error: --seeds {}: expected FIRST-LAST", args.seeds);
            std::process::exit(2)
        });
    let seeds: Vec<u64> = (first..=last).collect();
    let policies: Vec<(String, ResolvedPolicy)> = stems
        .iter()
        .map(|s| {
            let path = args.policies_dir.join(format!("{s}.yaml"));
            let l = policy::load_policy_file(&path).unwrap_or_else(|e| {
                eprintln!("error: {e}");
                std::process::exit(2)
            });
            let mut resolved = l.resolved;
            // The paper's method: a pod that fits nowhere is dropped, no preemption. (With the
            // openb pods' equal priorities the PostFilter never finds victims, so this changes
            // no placement; it saves its dry run over every node for each failed pod.)
            resolved.args.default_preemption = Some(DefaultPreemptionArgs {
                enabled: false,
                ..DefaultPreemptionArgs::default()
            });
            (s.clone(), resolved)
        })
        .collect();
    let clusters: Vec<Cluster> = traces.iter().map(|t| load_trace(&args.data, t)).collect();
    let by_name: Vec<HashMap<String, PodInfo>> = if args.explain_unallocated {
        clusters.iter().map(pods_by_name).collect()
    } else {
        Vec::new()
    };
    std::fs::create_dir_all(&args.out).expect("creating the output directory");
    let csv_path = args.out.join("study.csv");
    // Earlier runs outside this selection (other seeds, traces or policies) are dropped.
    let earlier: Vec<RunResult> = if args.resume {
        read_runs(&csv_path)
            .into_iter()
            .filter(|r| {
                seeds.contains(&r.seed)
                    && traces.contains(&r.trace)
                    && stems.iter().any(|s| policy_name(s) == r.policy)
            })
            .collect()
    } else {
        Vec::new()
    };
    let done = |t: usize, p: usize, seed: u64| {
        earlier.iter().any(|r| {
            r.trace == traces[t] && r.policy == policy_name(&policies[p].0) && r.seed == seed
        })
    };
    // Seed-major: an interrupted study has whole seeds (every trace and policy) done.
    let jobs: Vec<(usize, usize, u64)> = seeds
        .iter()
        .flat_map(|&s| {
            let n_policies = policies.len();
            (0..traces.len()).flat_map(move |t| (0..n_policies).map(move |p| (t, p, s)))
        })
        .filter(|&(t, p, s)| !done(t, p, s))
        .collect();
    // Each run is appended as it finishes; the file is rewritten sorted at the end.
    let mut start_csv = csv_header();
    for r in &earlier {
        start_csv.push_str(&csv_row(r));
    }
    std::fs::write(&csv_path, start_csv).expect("writing study.csv");
    let csv_file = Mutex::new(
        std::fs::OpenOptions::new()
            .append(true)
            .open(&csv_path)
            .expect("opening study.csv"),
    );
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    eprintln!(
        "{} runs ({} traces x {} policies x {} seeds, {} already in {}) on {threads} threads",
        jobs.len(),
        traces.len(),
        policies.len(),
        seeds.len(),
        earlier.len(),
        csv_path.display()
    );
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<RunResult>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(t, p, seed)) = jobs.get(i) else {
                        break;
                    };
                    let (stem, policy) = &policies[p];
                    let (seconds, pods, failed, unallocated, fragment, explain) = run_one(
                        clusters[t].clone(),
                        policy,
                        stem,
                        seed,
                        args.inflate,
                        by_name.get(t),
                    );
                    let r = RunResult {
                        trace: traces[t].clone(),
                        policy: policy_name(stem),
                        seed,
                        seconds,
                        pods,
                        failed,
                        unallocated,
                        fragment,
                        explain,
                    };
                    eprintln!(
                        "[{:>4}/{}] {:<12} {:<14} seed {seed}: {:.2} % unallocated at 100 % arrived ({seconds:.2} s)",
                        i + 1,
                        jobs.len(),
                        r.trace,
                        r.policy,
                        r.unallocated[100]
                    );
                    {
                        use std::io::Write;
                        let mut f = csv_file.lock().expect("study.csv");
                        f.write_all(csv_row(&r).as_bytes())
                            .expect("appending to study.csv");
                    }
                    results.lock().expect("results").push(r);
                }
            });
        }
    });
    let total = started.elapsed().as_secs_f64();
    let mut results = results.into_inner().expect("results");
    let ran = results.len();
    let ran_seconds: f64 = results.iter().map(|r| r.seconds).sum();
    let kept = earlier.len();
    let kept_seconds: f64 = earlier.iter().map(|r| r.seconds).sum();
    results.extend(earlier);
    results.sort_by(|a, b| {
        (traces.iter().position(|t| *t == a.trace), &a.policy, a.seed).cmp(&(
            traces.iter().position(|t| *t == b.trace),
            &b.policy,
            b.seed,
        ))
    });
    let names: Vec<String> = stems.iter().map(|s| policy_name(s)).collect();

    // CSV: one row per run, sorted.
    let mut csv = csv_header();
    for r in &results {
        csv.push_str(&csv_row(r));
    }
    std::fs::write(args.out.join("study.csv"), csv).expect("writing study.csv");

    // Means at 100 %, ours and the authors'.
    let mut ours: BTreeMap<(String, String), (f64, f64)> = BTreeMap::new();
    for t in &traces {
        for p in &names {
            let v: Vec<f64> = results
                .iter()
                .filter(|r| &r.trace == t && &r.policy == p)
                .map(|r| r.unallocated[100])
                .collect();
            if !v.is_empty() {
                ours.insert((t.clone(), p.clone()), mean_sd(&v));
            }
        }
    }
    let theirs: BTreeMap<(String, String), (f64, f64)> = authors(&args.expected)
        .into_iter()
        .map(|(k, v)| (k, mean_sd(&v)))
        .collect();

    let mut md = String::from(
        "Unallocated GPU % at 100 % arrived workload, mean ± sd of the seeds: ours / the authors'.\n\n| trace |",
    );
    for p in &names {
        md.push_str(&format!(" {p} |"));
    }
    md.push_str("\n|---|");
    md.push_str(&"---:|".repeat(names.len()));
    md.push('\n');
    for t in &traces {
        md.push_str(&format!("| {t} |"));
        for p in &names {
            let k = (t.clone(), p.clone());
            let o = ours
                .get(&k)
                .map_or("–".into(), |v| format!("{:.2} ± {:.2}", v.0, v.1));
            let a = theirs
                .get(&k)
                .map_or(String::new(), |v| format!(" / {:.2}", v.0));
            md.push_str(&format!(" {o}{a} |"));
        }
        md.push('\n');
    }
    md.push_str(&footer(
        ran,
        total,
        threads,
        ran_seconds,
        kept,
        kept_seconds,
    ));
    std::fs::write(args.out.join("table.md"), &md).expect("writing table.md");
    print!("{md}");
    if args.explain_unallocated {
        let report = explain_report(&results, &traces, &names);
        std::fs::write(args.out.join("unallocated.md"), &report).expect("writing unallocated.md");
        print!("\n{report}");
    }

    let seeds_label = if first == last {
        format!("seed {first}")
    } else {
        format!("seeds {first}-{last}")
    };
    line_chart(
        &args.out.join("unallocated-vs-arrived.svg"),
        &results,
        &names,
        &seeds_label,
    )
    .expect("drawing the line chart");
    bar_chart(
        &args.out.join("traces-at-100.svg"),
        &ours,
        &theirs,
        &traces,
        &names,
        &seeds_label,
    )
    .expect("drawing the bar chart");
    eprintln!("wrote {}", args.out.display());
}

#[cfg(test)]
mod tests {
    use super::footer;

    /// A fresh study reports its own wall time; a resumed one says how many runs it kept and
    /// that their wall time is not known, instead of passing this invocation's off as the
    /// whole study's.
    #[test]
    fn footer_separates_resumed_runs() {
        assert_eq!(
            footer(10, 20.4, 2, 38.0, 0, 0.0),
            "\n10 runs: 10 run by this invocation in 20 s of wall time on 2 threads (38 s of \
             runs summed).\n"
        );
        let f = footer(238, 144.0, 2, 280.0, 952, 9000.0);
        assert!(f.starts_with("\n1190 runs: 238 run by this invocation in 144 s"));
        assert!(f.contains("952 kept from an earlier study.csv (--resume; 9000 s of runs summed, wall time not recorded)"));
    }
}
