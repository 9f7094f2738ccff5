//! What Python sees of a lock's holder and of a watched lock's changes.

use pyo3::prelude::*;
use std::collections::BTreeMap;

/// Who holds a lock, as its record says (`sets3lock.status`, `Busy.holder`, watch events).
#[pyclass(frozen, module = "sets3lock")]
#[derive(Clone, Debug)]
pub(crate) struct Holder {
    /// `"sets3lock"`, `"terraform"` (Terraform's or OpenTofu's own lock), `"go-sets3lock"`
    /// (the Go tool's record) or `"unknown"`.
    #[pyo3(get)]
    kind: &'static str,
    /// The lock object's version (what `sets3lock.unlock` takes), where known.
    #[pyo3(get)]
    etag: Option<String>,
    /// The holder's owner id (hex), for a sets3lock record.
    #[pyo3(get)]
    owner: Option<String>,
    /// The holder's host name.
    #[pyo3(get)]
    host: Option<String>,
    /// The holder's process id.
    #[pyo3(get)]
    pid: Option<u32>,
    /// When the hold began, in seconds since the Unix epoch (the holder's clock).
    #[pyo3(get)]
    acquired_at: Option<f64>,
    /// The holder's lease in seconds (0: it never expires).
    #[pyo3(get)]
    lease: Option<f64>,
    /// The fencing token (fenced mode).
    #[pyo3(get)]
    token: Option<u64>,
    /// Whether the record says free (a released fenced lock).
    #[pyo3(get)]
    free: bool,
    /// The value the holder published.
    #[pyo3(get)]
    value: Option<String>,
    /// The Go tool's id.
    #[pyo3(get)]
    id: Option<String>,
    /// Terraform's lock info, under its field names (`ID`, `Operation`, `Info`, `Who`,
    /// `Version`, `Created`, `Path`): of a lock Terraform or OpenTofu wrote (kind
    /// `"terraform"`), or of a sets3lock hold written in Terraform's format.
    #[pyo3(get)]
    terraform: Option<BTreeMap<&'static str, String>>,
    description: String,
}

#[pymethods]
impl Holder {
    fn __str__(&self) -> String {
        self.description.clone()
    }

    fn __repr__(&self) -> String {
        format!("<sets3lock.Holder {}>", self.description)
    }
}

impl Holder {
    /// The holder `holder` describes, under ETag `etag` if known.
    pub(crate) fn from_record(holder: &sets3lock::proto::Holder, etag: Option<&str>) -> Holder {
        let mut made = Holder {
            kind: "unknown",
            etag: etag.map(str::to_owned),
            owner: None,
            host: None,
            pid: None,
            acquired_at: None,
            lease: None,
            token: holder.fence().map(|f| f.token),
            free: holder.is_free(),
            value: None,
            id: None,
            terraform: holder.terraform().map(|t| {
                BTreeMap::from([
                    ("ID", t.id.clone()),
                    ("Operation", t.operation.clone()),
                    ("Info", t.info.clone()),
                    ("Who", t.who.clone()),
                    ("Version", t.version.clone()),
                    ("Created", t.created.clone()),
                    ("Path", t.path.clone()),
                ])
            }),
            description: if holder.is_free() {
                holder.to_string()
            } else {
                sets3lock_cli::describe_holder(holder)
            },
        };
        match holder {
            sets3lock::proto::Holder::Sets3lock(r) => {
                made.kind = "sets3lock";
                made.owner = Some(r.owner.to_string());
                made.host = Some(r.host.clone());
                made.pid = Some(r.pid);
                made.acquired_at = Some(r.acquired_unix_ms as f64 / 1000.0);
                made.lease = Some(r.lease.as_secs_f64());
                made.value = r.value.clone();
            }
            sets3lock::proto::Holder::Terraform(_) => made.kind = "terraform",
            sets3lock::proto::Holder::GoSets3lock { id, .. } => {
                made.kind = "go-sets3lock";
                made.id = Some(id.clone());
            }
            _ => {}
        }
        made
    }
}

/// One change a watch saw (the first: the lock as it is now).
#[pyclass(frozen, module = "sets3lock")]
#[derive(Clone, Debug)]
pub(crate) struct WatchEvent {
    /// `"held"`, `"free"`, `"released"` (a fenced lock freed), `"stale"` (unchanged for a
    /// full lease: its holder may be gone), `"unreachable"` or `"reachable"`.
    #[pyo3(get)]
    kind: &'static str,
    /// The holder, for `held`, `stale` and `released`.
    #[pyo3(get)]
    holder: Option<Holder>,
    /// The lock object's version, for `held`, `stale` and `released`.
    #[pyo3(get)]
    etag: Option<String>,
    /// What went wrong, for `unreachable`.
    #[pyo3(get)]
    error: Option<String>,
}

#[pymethods]
impl WatchEvent {
    fn __repr__(&self) -> String {
        match (&self.holder, &self.error) {
            (Some(h), _) => format!("<sets3lock.WatchEvent {}: {}>", self.kind, h.description),
            (None, Some(e)) => format!("<sets3lock.WatchEvent {}: {e}>", self.kind),
            (None, None) => format!("<sets3lock.WatchEvent {}>", self.kind),
        }
    }
}

impl WatchEvent {
    /// The event for `sighting`.
    pub(crate) fn sighting(sighting: &sets3lock::proto::Sighting) -> WatchEvent {
        let kind = match sighting {
            sets3lock::proto::Sighting::Free => "free",
            sets3lock::proto::Sighting::Released { .. } => "released",
            sets3lock::proto::Sighting::Stale { .. } => "stale",
            _ => "held",
        };
        let etag = sighting.etag().map(|e| e.as_str().to_owned());
        WatchEvent {
            kind,
            holder: sighting
                .holder()
                .map(|h| Holder::from_record(h, etag.as_deref())),
            etag,
            error: None,
        }
    }

    /// The event for trouble reaching the store (`error`), or for reaching it again.
    pub(crate) fn reach(error: Option<String>) -> WatchEvent {
        WatchEvent {
            kind: if error.is_some() {
                "unreachable"
            } else {
                "reachable"
            },
            holder: None,
            etag: None,
            error,
        }
    }
}
