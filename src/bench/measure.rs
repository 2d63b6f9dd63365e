//! What the bench reads from the process and the disk: bytes written, CPU seconds, resident memory,
//! the database's size.

use super::*;

/// `write_bytes` of /proc/self/io: bytes this process caused to be sent to storage (0 where
/// the file is missing).
pub(crate) fn write_bytes() -> u64 {
    proc_field("/proc/self/io", "write_bytes:")
}

/// CPU time this process has used so far, every thread's (live or ended) user and system
/// time, in seconds: fields 14 and 15 of /proc/self/stat, in clock ticks of USER_HZ (100 on
/// Linux, fixed by its /proc ABI whatever the kernel's own tick). 0 where the file is missing.
pub(crate) fn cpu_seconds() -> f64 {
    const USER_HZ: f64 = 100.0;
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // `rest` starts at field 3 (state): utime is field 14, stime field 15.
    (ticks(11) + ticks(12)) as f64 / USER_HZ
}

/// Resident memory, VmRSS of /proc/self/status, in bytes (0 where the file is missing).
pub(crate) fn rss_bytes() -> u64 {
    proc_field("/proc/self/status", "VmRSS:") * 1024
}

pub(crate) fn proc_field(path: &str, name: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// The database file with its WAL and shared-memory files.
pub(crate) fn disk_bytes(db: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| {
            let mut p = db.as_os_str().to_owned();
            p.push(suffix);
            std::fs::metadata(PathBuf::from(p)).ok().map(|m| m.len())
        })
        .sum()
}

pub(crate) fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// Milliseconds from `due_at` to each of `arrivals` (negative for one before it), in order.
pub(crate) fn latencies_ms(arrivals: &[SystemTime], due_at: SystemTime) -> Vec<f64> {
    let mut ms: Vec<f64> = arrivals
        .iter()
        .map(|t| match t.duration_since(due_at) {
            Ok(d) => d.as_secs_f64() * 1e3,
            Err(e) => -e.duration().as_secs_f64() * 1e3,
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    ms
}

/// The `p` percentile (0 to 1) of sorted `ms` over all `deadlines`, to 0.1 ms: one that falls
/// among lapse tasks not received (within the wait) is null (later than the wait), never the
/// figure of those that did arrive.
pub(crate) fn percentile(ms: &[f64], deadlines: usize, p: f64) -> Value {
    let i = ((p * deadlines as f64).ceil() as usize).clamp(1, deadlines) - 1;
    ms.get(i).map_or(Value::Null, |v| json!(round(*v, 1)))
}
