//! What every command shares to talk to people and to programs: progress bars on stderr (drawn
//! only when stderr is a terminal), table lines on stdout (or stderr) that print around the bar,
//! JSON mode (tables suppressed, the records printed as one JSON array), the record of one
//! measurement, and the date for what a command writes.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fmt::Display;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

static JSON: AtomicBool = AtomicBool::new(false);
static TABLES_ON_STDERR: AtomicBool = AtomicBool::new(false);
/// The bar on screen, if any: lines print around it.
static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Machine output: `--json` suppresses the tables; the command prints its records as JSON.
pub fn set_json(on: bool) {
    JSON.store(on, Ordering::Relaxed);
}

/// Whether tables are suppressed for JSON output.
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// Tables on stderr instead of stdout (`mgpu bench suite`: stdout holds its summary alone).
pub fn set_tables_on_stderr(on: bool) {
    TABLES_ON_STDERR.store(on, Ordering::Relaxed);
}

fn current() -> Option<ProgressBar> {
    BAR.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Runs `f` with the bar (if any) cleared from the screen, then draws it again.
fn around_bar(f: impl FnOnce()) {
    match current() {
        Some(bar) => bar.suspend(f),
        None => f(),
    }
}

/// A line of a table (or a `#` comment of it) on stdout (or stderr, where set); nothing in JSON
/// mode.
pub fn line(s: impl Display) {
    if json() {
        return;
    }
    if TABLES_ON_STDERR.load(Ordering::Relaxed) {
        around_bar(|| eprintln!("{s}"));
    } else {
        around_bar(|| println!("{s}"));
    }
}

/// A message for people on stderr (first-use times, warnings), around the bar.
pub fn note(s: impl Display) {
    around_bar(|| eprintln!("{s}"));
}

/// A progress bar on stderr, hidden when stderr is not a terminal (tests, CI logs, pipes). While
/// it lives, [`line()`] and [`note`] print around it and [`tick`] advances it.
pub struct Progress(ProgressBar);

impl Progress {
    /// A bar of `len` steps, labelled `what`.
    pub fn new(len: u64, what: &str) -> Progress {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(len), target);
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:.bold} [{bar:30.cyan/blue}] {pos}/{len} {elapsed_precise} (eta {eta}) {msg}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        *BAR.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar.clone());
        Progress(bar)
    }

    /// What the bar is working on now.
    pub fn set_message(&self, msg: impl Into<String>) {
        self.0.set_message(msg.into());
    }

    /// One step done.
    pub fn inc(&self) {
        self.0.inc(1);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.0.finish_and_clear();
        *BAR.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Advances the bar on screen (if any) by one step and says what comes next.
pub fn tick(next: impl Into<String>) {
    if let Some(bar) = current() {
        bar.inc(1);
        bar.set_message(next.into());
    }
}

/// Says what the bar on screen (if any) is working on.
pub fn working_on(what: impl Into<String>) {
    if let Some(bar) = current() {
        bar.set_message(what.into());
    }
}

/// One measurement of `mgpu bench`: what `--json` prints, `--chart` draws and `mgpu tune` reads.
#[derive(Clone, Debug)]
pub struct Record {
    /// The benchmark (`scan`, `sort`, `select`, ...).
    pub primitive: String,
    /// What was measured (`sort-keys`, `select-if/50%`, `segreduce/fixed20`, ...).
    pub variant: String,
    /// The element type.
    pub ty: String,
    /// log2 of the size (elements; nonzeros for spmv).
    pub log2: u32,
    /// Items processed (the chart's and tune's throughput is items / time).
    pub items: f64,
    /// Median time of mgpu, milliseconds.
    pub ms: f64,
    /// Bytes that must move.
    pub bytes: f64,
    /// A device memcpy of the same bytes, milliseconds.
    pub memcpy_ms: f64,
    /// Peers (CUB, radix sort, cuSPARSE) by name, milliseconds where they ran.
    pub peers: Vec<(String, Option<f64>)>,
    /// Further numbers of this bench (segments, plan time, ...).
    pub extra: Vec<(&'static str, Option<f64>)>,
    /// The tuning in effect (`NTxVTxOCC`), where known.
    pub tuning: String,
}

impl Record {
    /// G items per second of a run of `ms` milliseconds over this record's items.
    pub fn gitems(&self, ms: f64) -> f64 {
        self.items / ms / 1e6
    }

    /// The record as a JSON object.
    pub fn to_json(&self, tuning_source: &str) -> serde_json::Value {
        let mut o = serde_json::Map::new();
        o.insert("primitive".into(), self.primitive.clone().into());
        o.insert("variant".into(), self.variant.clone().into());
        o.insert("type".into(), self.ty.clone().into());
        o.insert("log2n".into(), self.log2.into());
        o.insert("items".into(), self.items.into());
        o.insert("mgpu_ms".into(), self.ms.into());
        o.insert("gitems_per_s".into(), self.gitems(self.ms).into());
        o.insert("bytes".into(), self.bytes.into());
        o.insert("memcpy_ms".into(), self.memcpy_ms.into());
        for (name, ms) in &self.peers {
            o.insert(format!("{name}_ms"), (*ms).into());
        }
        for (name, v) in &self.extra {
            o.insert((*name).into(), (*v).into());
        }
        o.insert("tuning".into(), self.tuning.clone().into());
        o.insert("tuning_source".into(), tuning_source.into());
        serde_json::Value::Object(o)
    }
}

/// Prints `records` on stdout as one JSON array.
pub fn print_json(records: &[Record], tuning_source: &str) {
    let rows: Vec<_> = records.iter().map(|r| r.to_json(tuning_source)).collect();
    println!(
        "{}",
        serde_json::to_string_pretty(&rows).expect("numbers and strings serialize")
    );
}

/// Seconds since 1970-01-01 00:00 UTC.
fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Today's date (UTC) as YYYY-MM-DD.
pub fn today() -> String {
    civil_date((unix_seconds() / 86_400) as i64)
}

/// The date and time now as `YYYY-MM-DD HH:MM UTC`.
pub fn now_utc() -> String {
    let secs = unix_seconds();
    let (hour, minute) = (secs % 86_400 / 3600, secs % 3600 / 60);
    format!("{} {hour:02}:{minute:02} UTC", today())
}

/// The proleptic Gregorian date of a day number (days since 1970-01-01).
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(19_723), "2024-01-01");
        assert_eq!(civil_date(20_513), "2026-03-01");
    }
}
