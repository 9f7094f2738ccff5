//! Keyword arguments into the library's settings: durations as the command reads them,
//! store options as the command builds them, the lock's `Config`, and how long to wait.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use sets3lock::proto::{LockUrl, Scheme};
use sets3lock::{Options, StoreCheck, Wait};
use std::time::Duration;

use crate::errors::{to_py, wrong_type};

/// The options about where the store is and who we are there.
pub(crate) const STORE: &[&str] = &[
    "request_timeout",
    "endpoint",
    "region",
    "profile",
    "path_style",
];

/// The lock's own settings.
pub(crate) const LOCK: &[&str] = &[
    "lease",
    "fenced",
    "value",
    "poll_max",
    "foreign_lease",
    "retry_limit",
    "store_check",
    "lock_format",
    "operation",
    "terraform_lease",
];

/// How long an acquisition waits.
pub(crate) const WAIT: &[&str] = &["timeout", "wait"];

/// The keyword arguments of one call, checked against the names it takes.
pub(crate) struct Settings<'py> {
    given: Option<Bound<'py, PyDict>>,
}

impl<'py> Settings<'py> {
    /// `given`, refusing any name not in one of `takes` (a `TypeError`, as Python's own).
    pub(crate) fn read(
        what: &str,
        given: Option<&Bound<'py, PyDict>>,
        takes: &[&[&str]],
    ) -> PyResult<Settings<'py>> {
        if let Some(given) = given {
            for key in given.keys() {
                let key: String = key.extract()?;
                if !takes.iter().any(|names| names.contains(&key.as_str())) {
                    return Err(PyTypeError::new_err(format!(
                        "{what}() got an unexpected keyword argument '{key}'"
                    )));
                }
            }
        }
        Ok(Settings {
            given: given.cloned(),
        })
    }

    fn get(&self, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        match &self.given {
            Some(d) => Ok(d.get_item(name)?.filter(|v| !v.is_none())),
            None => Ok(None),
        }
    }

    /// A duration argument, if given.
    pub(crate) fn duration(&self, name: &str) -> PyResult<Option<Duration>> {
        self.get(name)?.map(|v| duration(name, &v)).transpose()
    }

    fn flag(&self, name: &str) -> PyResult<bool> {
        match self.get(name)? {
            None => Ok(false),
            Some(v) => v
                .extract::<bool>()
                .map_err(|_| wrong_type(name, "True or False")),
        }
    }

    fn text(&self, name: &str) -> PyResult<Option<String>> {
        self.get(name)?
            .map(|v| {
                v.extract::<String>()
                    .map_err(|_| wrong_type(name, "a string"))
            })
            .transpose()
    }

    /// The store options for a lock in `scheme`'s store: the environment, then these
    /// arguments, as the command's flags.
    pub(crate) fn store(&self, scheme: Scheme) -> PyResult<Options> {
        let endpoint = self.text("endpoint")?;
        let region = self.text("region")?;
        let profile = self.text("profile")?;
        let mut options = from_env_shared(scheme, profile.as_deref()).map_err(to_py)?;
        if let Some(endpoint) = endpoint {
            let endpoint = sets3lock::parse_endpoint(&endpoint).map_err(to_py)?;
            options.set_endpoint(scheme, endpoint);
        }
        if let Some(region) = region {
            options.s3.region = region;
        }
        if self.flag("path_style")? {
            options.s3.path_style = Some(true);
        }
        if let Some(t) = self.duration("request_timeout")? {
            if t.is_zero() {
                return Err(PyValueError::new_err("request_timeout must be more than 0"));
            }
            options.request_timeout = t;
        }
        Ok(options)
    }

    /// The store options and the lock's settings, for a lock in `scheme`'s store.
    pub(crate) fn lock(&self, scheme: Scheme) -> PyResult<Options> {
        let mut options = self.store(scheme)?;
        let config = &mut options.lock;
        if let Some(lease) = self.duration("lease")? {
            config.lease = lease;
        }
        config.fenced = self.flag("fenced")?;
        config.value = self.text("value")?;
        if let Some(cap) = self.duration("poll_max")? {
            if cap.is_zero() {
                return Err(PyValueError::new_err(
                    "poll_max must be more than 0 (the longest pause between a waiter's reads)",
                ));
            }
            config.poll.cap = cap;
            config.poll.floor = config.poll.floor.min(cap);
        }
        config.foreign_lease = self.duration("foreign_lease")?;
        config.terraform_lease = self.duration("terraform_lease")?;
        if let Some(limit) = self.get("retry_limit")? {
            config.retry_limit = whole(
                "retry_limit",
                &limit,
                "a number of retries from 0 to 4294967295",
            )?;
        }
        config
            .validate()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        if let Some(format) = self.text("lock_format")? {
            options.lock_format = format
                .parse()
                .map_err(|e: sets3lock::InvalidLockFormat| PyValueError::new_err(e.to_string()))?;
        }
        options.operation = self.text("operation")?;
        options.store_check = match self.text("store_check")?.as_deref() {
            None | Some("cached") => StoreCheck::in_user_cache(),
            Some("once") => StoreCheck::Once,
            Some("off") => StoreCheck::Off,
            Some(other) => {
                return Err(PyValueError::new_err(format!(
                    "store_check {other:?}: write \"cached\" (the default: the verdict kept a day), \"once\" (once per process) or \"off\""
                )))
            }
        };
        Ok(options)
    }

    /// How long to wait: `wait=False` tries once, `timeout=D` waits at most D, neither
    /// waits as long as it takes.
    pub(crate) fn wait(&self) -> PyResult<Wait> {
        let waits = match self.get("wait")? {
            None => true,
            Some(v) => v
                .extract::<bool>()
                .map_err(|_| wrong_type("wait", "True or False"))?,
        };
        let timeout = self.duration("timeout")?;
        Ok(match (waits, timeout) {
            (false, Some(_)) => {
                return Err(PyValueError::new_err(
                    "wait=False tries once: it takes no timeout (give one or the other)",
                ))
            }
            (false, None) => Wait::No,
            (true, Some(t)) => Wait::Timeout(t),
            (true, None) => Wait::Forever,
        })
    }
}

/// `url` parsed as the command does (`s3://bucket/key`, `az://container/key`,
/// `gs://bucket/key`); a `ValueError` with the command's message if it is not one.
pub(crate) fn lock_url(url: &str) -> PyResult<LockUrl> {
    LockUrl::parse(url).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A duration: seconds (int or float), a string as the command's flags take (`30s`, `5m`,
/// `1h30m`, `250ms`) or a `datetime.timedelta`.
pub(crate) fn duration(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let takes = "seconds (an int or a float), a string like \"30s\", \"5m\" or \"250ms\", or a datetime.timedelta";
    if value.is_instance_of::<PyString>() {
        let text: String = value.extract()?;
        return sets3lock_cli::parse_duration(&text).map_err(PyValueError::new_err);
    }
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(wrong_type(name, takes));
    }
    let seconds: f64 = if let Ok(s) = value.extract::<f64>() {
        s
    } else if value.hasattr("total_seconds")? {
        value
            .call_method0("total_seconds")?
            .extract()
            .map_err(|_| wrong_type(name, takes))?
    } else {
        return Err(wrong_type(name, takes));
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| {
        PyValueError::new_err(format!(
            "{name} = {seconds}: a duration is 0 or more seconds (and less than 2^64)"
        ))
    })
}

/// A duration given as a plain argument, if not `None`.
pub(crate) fn optional_duration(
    name: &str,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Duration>> {
    value
        .filter(|v| !v.is_none())
        .map(|v| duration(name, v))
        .transpose()
}

/// A whole number in `u32`'s range: `TypeError` for anything but an int (`True` included),
/// `ValueError` saying `range` for an int out of it.
pub(crate) fn whole(name: &str, value: &Bound<'_, PyAny>, range: &str) -> PyResult<u32> {
    if value.is_instance_of::<pyo3::types::PyBool>()
        || !value.is_instance_of::<pyo3::types::PyInt>()
    {
        return Err(wrong_type(name, "a whole number (an int)"));
    }
    value
        .extract::<u32>()
        .map_err(|_| PyValueError::new_err(format!("{name} = {value}: give {range}")))
}

/// The options the environment gives, made once per store, profile and environment: locks
/// made in one process share a credential source, its cache and its thread (one fetch from
/// instance metadata or STS for all of them, not one per lock). A changed environment (a
/// variable a chain reads) makes new ones.
fn from_env_shared(scheme: Scheme, profile: Option<&str>) -> Result<Options, sets3lock::Error> {
    type Key = (Scheme, Option<String>, Vec<(String, String)>);
    static MADE: std::sync::Mutex<Vec<(Key, Options)>> = std::sync::Mutex::new(Vec::new());
    const READ: [&str; 10] = [
        "AWS_",
        "AZURE_",
        "GOOGLE_",
        "GCE_",
        "CLOUDSDK_",
        "IDENTITY_",
        "SETS3LOCK_",
        "STORAGE_",
        "HOME",
        "NO_GCE_CHECK",
    ];
    let mut vars: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| READ.iter().any(|p| name.starts_with(p)))
        .collect();
    vars.sort();
    let key: Key = (scheme, profile.map(str::to_owned), vars);
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, options)) = made.iter().find(|(k, _)| *k == key) {
        return Ok(options.clone());
    }
    let options = match profile {
        Some(p) => Options::from_env_with_profile(scheme, p),
        None => Options::from_env(scheme),
    }?;
    // A few environments at most in a process: keep the last eight.
    if made.len() >= 8 {
        made.remove(0);
    }
    made.push((key, options.clone()));
    Ok(options)
}
