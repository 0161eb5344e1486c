//! Printing a simulation report as JSON or as tables for people.

use std::io::{self, Write};

use scheduler::sim::{PodStatus, Report};

/// Print the report as one JSON document.
pub fn print_json(report: &Report) -> io::Result<()> {
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, report).map_err(io::Error::other)?;
    writeln!(out)
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

/// Print the report as tables.
pub fn print_table(report: &Report) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let w_pod = report
        .pods
        .iter()
        .map(|p| p.namespace.len() + p.name.len() + 1)
        .max()
        .unwrap_or(3)
        .max(3);
    let w_node = report
        .pods
        .iter()
        .filter_map(|p| p.node.as_ref().map(String::len))
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(
        out,
        "{:<w_pod$}  {:<13}  {:<w_node$}  MESSAGE",
        "POD", "STATUS", "NODE"
    )?;
    for p in &report.pods {
        let mut msg = p.message.clone();
        if let Some(g) = &p.gpu_indexes {
            msg.push_str(&format!(" (GPUs {g:?})"));
        }
        writeln!(
            out,
            "{:<w_pod$}  {:<13}  {:<w_node$}  {}",
            format!("{}/{}", p.namespace, p.name),
            format!("{:?}", p.status),
            p.node.as_deref().unwrap_or("-"),
            msg
        )?;
        if let Some(d) = &p.diagnosis {
            for (node, reasons) in d {
                writeln!(out, "    ✗ {node}: {}", reasons.join(", "))?;
            }
        }
        if let Some(s) = &p.scores {
            let mut rows: Vec<_> = s.iter().collect();
            rows.sort_by(|a, b| b.1.total.cmp(&a.1.total).then(a.0.cmp(b.0)));
            for (node, sc) in rows {
                let parts: Vec<String> =
                    sc.plugins.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let mark = if p.node.as_deref() == Some(node.as_str())
                    && p.status == PodStatus::Scheduled
                {
                    "→"
                } else {
                    " "
                };
                writeln!(
                    out,
                    "    {mark} {node}: total {} ({})",
                    sc.total,
                    parts.join(", ")
                )?;
            }
        }
    }
    let s = &report.summary;
    writeln!(out)?;
    writeln!(out, "Summary: {} nodes, {} pods", s.nodes, s.pods)?;
    for (k, v) in &s.by_status {
        writeln!(out, "  {k:<13} {v}")?;
    }
    if !s.failure_reasons.is_empty() {
        writeln!(out, "Failure reasons (unschedulable pods per reason):")?;
        for (k, v) in &s.failure_reasons {
            writeln!(out, "  {v:>6}  {k}")?;
        }
    }
    writeln!(out, "Resources (allocated / allocatable):")?;
    for r in &s.resources {
        writeln!(
            out,
            "  {:<28} {:>12} / {:<12} {:>6.1}%",
            r.resource,
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
    writeln!(
        out,
        "Wall time {:.3} s, {:.0} pods/s",
        s.wall_time_seconds, s.pods_per_second
    )
}
