//! Printing a simulation as JSON or as tables for people, one pod at a time as the simulation
//! produces them: memory stays bounded by the cluster, however large the report (`--explain`
//! on a large trace writes gigabytes).

use std::cell::RefCell;
use std::io::{self, BufWriter, Write};

use indicatif::ProgressBar;
use serde::ser::{Serialize, SerializeStruct, Serializer};

use scheduler::escape::escape_control_line;
use scheduler::sim::{PodOutcome, PodStatus, Simulation, Summary};

/// The report document, `{"pods": [...], "summary": {...}, "warnings": [...]}`, serialized
/// while the simulation runs: each pod is written as it is scheduled, the summary after the last.
struct StreamedReport<'a>(RefCell<&'a mut Simulation>, &'a ProgressBar);

/// The `pods` array: the simulation's outcomes, drawn as they are serialized.
struct Pods<'r, 'a>(&'r RefCell<&'a mut Simulation>, &'a ProgressBar);

impl Serialize for Pods<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut run = self.0.borrow_mut();
        s.collect_seq((&mut **run).inspect(|_| self.1.inc(1)))
    }
}

impl Serialize for StreamedReport<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let warnings = !self.0.borrow().warnings().is_empty();
        let mut st = s.serialize_struct("Report", 2 + usize::from(warnings))?;
        st.serialize_field("pods", &Pods(&self.0, self.1))?;
        let run = self.0.borrow();
        st.serialize_field("summary", &run.summary())?;
        if warnings {
            st.serialize_field("warnings", run.warnings())?;
        }
        st.end()
    }
}

/// Print the report as one JSON document (the shape of [`scheduler::sim::Report`]), advancing
/// `progress` by one per pod.
pub fn print_json(run: &mut Simulation, progress: &ProgressBar) -> io::Result<()> {
    let mut out = BufWriter::new(io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, &StreamedReport(RefCell::new(run), progress))?;
    writeln!(out)?;
    out.flush()
}

fn human_bytes(v: i64) -> String {
    const GI: f64 = (1u64 << 30) as f64;
    format!("{:.1}Gi", v as f64 / GI)
}

fn fmt_amount(resource: &str, v: i64) -> String {
    match resource {
        "cpu" => format!("{:.1}", v as f64 / 1000.0),
        "memory" | "ephemeral-storage" => human_bytes(v),
        _ => v.to_string(),
    }
}

/// One pod's rows: the outcome, then with `--explain` each failed node's reasons and each
/// feasible node's scores (highest first).
fn write_pod(out: &mut impl Write, p: &PodOutcome, w_pod: usize, w_node: usize) -> io::Result<()> {
    let mut msg = p.message.clone();
    if let Some(g) = &p.gpu_indexes {
        msg.push_str(&format!(" (GPUs {g:?})"));
    }
    if let Some(n) = &p.nominated_node_name {
        msg.push_str(&format!(" (nominated node {n})"));
    }
    writeln!(
        out,
        "{:<w_pod$}  {:<13}  {:<w_node$}  {}",
        escape_control_line(&format!("{}/{}", p.namespace, p.name)),
        format!("{:?}", p.status),
        escape_control_line(p.node.as_deref().unwrap_or("-")),
        escape_control_line(&msg)
    )?;
    if let Some(d) = &p.diagnosis {
        for (node, reasons) in d {
            let line = format!("    ✗ {node}: {}", reasons.join(", "));
            writeln!(out, "{}", escape_control_line(&line))?;
        }
    }
    if let Some(pre) = &p.preemption {
        for c in &pre.candidates {
            let chosen = pre.nominated_node.as_deref() == Some(c.node.as_str());
            let mark = if chosen { "→" } else { " " };
            let line = format!(
                "    {mark} preempt on {}: {} ({} PDB violation(s))",
                c.node,
                c.victims.join(", "),
                c.num_pdb_violations
            );
            writeln!(out, "{}", escape_control_line(&line))?;
        }
        for c in pre.after_extenders.iter().flatten() {
            let line = format!("    ⇒ extenders kept {}: {}", c.node, c.victims.join(", "));
            writeln!(out, "{}", escape_control_line(&line))?;
        }
        if !pre.message.is_empty() {
            let line = format!("    ✗ preemption: {}", pre.message);
            writeln!(out, "{}", escape_control_line(&line))?;
        }
    }
    if let Some(s) = &p.scores {
        let mut rows: Vec<_> = s.iter().collect();
        rows.sort_by(|a, b| b.1.total.cmp(&a.1.total).then(a.0.cmp(b.0)));
        for (node, sc) in rows {
            let parts: Vec<String> = sc.plugins.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let chosen =
                p.node.as_deref() == Some(node.as_str()) && p.status == PodStatus::Scheduled;
            let mark = if chosen { "→" } else { " " };
            let line = format!(
                "    {mark} {node}: total {} ({})",
                sc.total,
                parts.join(", ")
            );
            writeln!(out, "{}", escape_control_line(&line))?;
        }
    }
    Ok(())
}

/// `explain`'s answer for one pod: its outcome in kube-scheduler's words, every node that does
/// not fit with its reasons, and the nodes that fit, best first, with each plugin's weighted
/// score.
pub fn write_explain(out: &mut impl Write, p: &PodOutcome) -> io::Result<()> {
    let pod = format!("{}/{}", p.namespace, p.name);
    writeln!(out, "Pod {}: {:?}", escape_control_line(&pod), p.status)?;
    writeln!(out, "  {}", escape_control_line(&p.message))?;
    if let Some(d) = p.diagnosis.as_ref().filter(|d| !d.is_empty()) {
        writeln!(out, "Nodes that do not fit ({}):", d.len())?;
        for (node, reasons) in d {
            let line = format!("  ✗ {node}: {}", reasons.join(", "));
            writeln!(out, "{}", escape_control_line(&line))?;
        }
    }
    if let Some(s) = p.scores.as_ref().filter(|s| !s.is_empty()) {
        writeln!(
            out,
            "Nodes that fit, best first (total, then each plugin's score):"
        )?;
        let mut rows: Vec<_> = s.iter().collect();
        rows.sort_by(|a, b| b.1.total.cmp(&a.1.total).then(a.0.cmp(b.0)));
        for (node, sc) in rows {
            let parts: Vec<String> = sc.plugins.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let line = format!("  {node}: total {} ({})", sc.total, parts.join(", "));
            writeln!(out, "{}", escape_control_line(&line))?;
        }
    }
    Ok(())
}

fn write_summary(out: &mut impl Write, s: &Summary) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "Summary: {} nodes, {} pods", s.nodes, s.pods)?;
    for (k, v) in &s.by_status {
        writeln!(out, "  {k:<13} {v}")?;
    }
    if !s.failure_reasons.is_empty() {
        writeln!(out, "Failure reasons (unschedulable pods per reason):")?;
        for (k, v) in &s.failure_reasons {
            writeln!(out, "  {v:>6}  {}", escape_control_line(k))?;
        }
    }
    writeln!(out, "Resources (allocated / allocatable):")?;
    for r in &s.resources {
        writeln!(
            out,
            "  {:<28} {:>12} / {:<12} {:>6.1}%",
            escape_control_line(&r.resource),
            fmt_amount(&r.resource, r.allocated),
            fmt_amount(&r.resource, r.allocatable),
            r.ratio * 100.0
        )?;
    }
    if s.gpu.devices > 0 {
        writeln!(
            out,
            "GPU devices: {} ({} idle); allocated {:.1} of {} GPUs: allocation ratio {:.2}%",
            s.gpu.devices,
            s.gpu.idle_devices,
            s.gpu.allocated_milli as f64 / 1000.0,
            s.gpu.capacity_milli / 1000,
            s.gpu.allocation_ratio * 100.0
        )?;
    }
    if let Some(r) = &s.replay {
        let at: Vec<String> = r
            .unallocated_gpu_percent_at_arrived
            .iter()
            .map(|(x, v)| format!("{x}%: {v:.2}%"))
            .collect();
        writeln!(
            out,
            "Replay: {} typical pods, {} pods inflated; unallocated GPU at arrived {}",
            r.typical_pods,
            r.inflated_pods,
            at.join(", ")
        )?;
    }
    writeln!(
        out,
        "Wall time {:.3} s, {:.0} pods/s",
        s.wall_time_seconds, s.pods_per_second
    )
}

/// Print the report as tables: one row per pod as it is decided, then the summary. Values read
/// from the input are printed with control characters escaped. `progress` advances by one per pod.
pub fn print_table(run: &mut Simulation, progress: &ProgressBar) -> io::Result<()> {
    let mut out = BufWriter::new(io::stdout().lock());
    let (w_pod, w_node) = (run.pod_column_width(), run.node_column_width());
    writeln!(
        out,
        "{:<w_pod$}  {:<13}  {:<w_node$}  MESSAGE",
        "POD", "STATUS", "NODE"
    )?;
    for p in run.by_ref() {
        write_pod(&mut out, &p, w_pod, w_node)?;
        progress.inc(1);
    }
    write_summary(&mut out, &run.summary())?;
    out.flush()
}
