//! Which ADC source applies, from the variables and files alone: `GOOGLE_APPLICATION_CREDENTIALS`,
//! then gcloud's well-known file, then the metadata server (the last resort, found out by
//! asking it; `NO_GCE_CHECK=true` skips it).

use super::files::{read, FileSource};
use super::metadata::{Metadata, DEFAULT_HOST};
use crate::signin::bearer::{is_true, Clients, PROBE_LIMIT};
use crate::signin::chained::{Chained, Name, Nothing};
use crate::signin::fetch::CaBundle;
use crate::signin::refresh::{Fetch, Fetched};
use crate::signin::source::{BearerToken, CredentialSource};
use crate::Error;
use std::path::PathBuf;
use std::sync::Arc;

/// The advice when nothing gave a token.
const FIX: &str = "outside Google Cloud run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a credentials file (a service account key, or a workload identity federation configuration)";

/// gcloud's file's name.
const WELL_KNOWN: &str = "application_default_credentials.json";

enum Source {
    /// Boxed: a file's source is ten times a metadata server's.
    File(Box<FileSource>),
    Metadata(Metadata),
}

struct Fetcher {
    source: Arc<Source>,
    clients: Clients,
    /// A token has been had once (the metadata server is then given more time).
    answered: bool,
}

impl Fetch for Fetcher {
    type Value = String;
    fn fetch(&mut self) -> Result<Fetched<String>, String> {
        let fetched = match self.source.as_ref() {
            Source::File(f) => f.token(&mut self.clients),
            Source::Metadata(m) => {
                let url = m.url()?;
                let limit = m.limit(self.answered);
                let http = match limit <= PROBE_LIMIT {
                    true => self.clients.for_probe(&url, limit)?,
                    false => self.clients.for_url(&url, limit)?,
                };
                m.token(http)
            }
        };
        self.answered |= fetched.is_ok();
        fetched
    }
}

/// gcloud's file: `$CLOUDSDK_CONFIG/…`, else `~/.config/gcloud/…` (`%APPDATA%\gcloud\…` on
/// Windows).
fn well_known(var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(dir) = var("CLOUDSDK_CONFIG") {
        return Some(PathBuf::from(dir).join(WELL_KNOWN));
    }
    if cfg!(windows) {
        return var("APPDATA").map(|d| PathBuf::from(d).join("gcloud").join(WELL_KNOWN));
    }
    crate::signin::fetch::home(var).map(|h| h.join(".config/gcloud").join(WELL_KNOWN))
}

/// The chain from `var` (`GcsSettings::from_vars`); `gcloud_file`: whether to look for
/// gcloud's file.
pub(crate) fn resolve(
    var: &dyn Fn(&str) -> Option<String>,
    gcloud_file: bool,
    ca_bundle: &CaBundle,
) -> Result<Arc<dyn CredentialSource<BearerToken>>, Error> {
    resolve_named(var, &Named::default(), gcloud_file, ca_bundle)
}

/// What settings made in code name, ahead of the whole environment: a credentials file, else
/// the metadata server's host (asked even with `NO_GCE_CHECK`); the environment's chain only
/// when they name neither.
#[derive(Debug, Default)]
pub(crate) struct Named {
    pub(crate) file: Option<PathBuf>,
    pub(crate) metadata_host: Option<String>,
}

/// The chain from `var`, with what `named` names first.
pub(crate) fn resolve_named(
    var: &dyn Fn(&str) -> Option<String>,
    named: &Named,
    gcloud_file: bool,
    ca_bundle: &CaBundle,
) -> Result<Arc<dyn CredentialSource<BearerToken>>, Error> {
    let chained = |source: Source, tried: Vec<String>| -> Arc<dyn CredentialSource<BearerToken>> {
        let (name, fix) = match &source {
            Source::File(f) => (f.name(), f.fix()),
            Source::Metadata(m) => (m.name(), FIX),
        };
        let source = Arc::new(source);
        let ca_bundle = ca_bundle.clone();
        let fetcher = move || Fetcher {
            source: source.clone(),
            clients: Clients::new(ca_bundle.clone()),
            answered: false,
        };
        Arc::new(Chained::new(
            fetcher,
            Name::new(name),
            tried,
            fix,
            "google-token",
        ))
    };
    let file = |path: PathBuf| {
        read(&path, var)
            .map(|f| Source::File(Box::new(f)))
            .map_err(|reason| {
                Error::Settings(crate::SettingsError::GcsCredentials { path, reason })
            })
    };
    let mut tried = Vec::new();
    if let Some(path) = &named.file {
        return Ok(chained(file(path.clone())?, tried));
    }
    if let Some(host) = &named.metadata_host {
        let metadata = Metadata {
            named: true,
            host: host.clone(),
        };
        return Ok(chained(Source::Metadata(metadata), tried));
    }
    if let Some(path) = var("GOOGLE_APPLICATION_CREDENTIALS") {
        return Ok(chained(file(PathBuf::from(path))?, tried));
    }
    tried.push("GOOGLE_APPLICATION_CREDENTIALS (not set)".to_owned());
    if gcloud_file {
        match well_known(var) {
            Some(path) if path.exists() => return file(path).map(|s| chained(s, tried)),
            Some(path) => tried.push(format!("gcloud's {} (not found)", path.display())),
            None => tried.push(format!(
                "gcloud's {WELL_KNOWN} (no HOME or CLOUDSDK_CONFIG to find it in)"
            )),
        }
    }
    if is_true(var, "NO_GCE_CHECK") {
        tried.push("the metadata server (skipped: NO_GCE_CHECK)".to_owned());
        return Ok(Arc::new(Nothing {
            tried,
            fix: FIX.to_owned(),
        }));
    }
    let named = var("GCE_METADATA_HOST").or_else(|| var("GCE_METADATA_IP"));
    let metadata = Metadata {
        named: named.is_some(),
        host: named.unwrap_or_else(|| DEFAULT_HOST.to_owned()),
    };
    Ok(chained(Source::Metadata(metadata), tried))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signin::stub::Stub;

    fn vars(pairs: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
        move |n: &str| pairs.iter().find(|(k, _)| *k == n).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_metadata_server_is_asked_where_gce_metadata_host_says() {
        let stub = Stub::start(|r| {
            if r.header("metadata-flavor") == Some("Google") {
                (
                    200,
                    r#"{"access_token":"ya29.gce","expires_in":3599,"token_type":"Bearer"}"#.into(),
                )
            } else {
                (403, "{}".into())
            }
        });
        let home = std::env::temp_dir().join(format!("sets3lock-nohome-{}", std::process::id()));
        let var = vars(vec![
            ("GCE_METADATA_HOST", stub.host_port()),
            ("HOME", home.display().to_string()),
        ]);
        let source = resolve(&var, true, &CaBundle::default()).expect("source");
        source.ready().expect("ready");
        assert_eq!(source.current().expect("token").secret(), "ya29.gce");
        let r = &stub.seen()[0];
        assert_eq!(
            r.target,
            "/computeMetadata/v1/instance/service-accounts/default/token"
        );
        assert!(source.sign_in().source.contains("metadata server"));
    }

    #[test]
    fn gcloud_s_file_is_found_under_home() {
        let stub = Stub::start(|_| {
            (
                200,
                r#"{"access_token":"ya29.adc","expires_in":3599}"#.into(),
            )
        });
        let home = std::env::temp_dir().join(format!("sets3lock-home-{}", std::process::id()));
        let dir = home.join(".config/gcloud");
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(
            dir.join(WELL_KNOWN),
            serde_json::json!({
                "type": "authorized_user", "client_id": "c", "client_secret": "s",
                "refresh_token": "r", "token_uri": stub.url.as_str(),
            })
            .to_string(),
        )
        .expect("write");
        let var = vars(vec![("HOME", home.display().to_string())]);
        let source = resolve(&var, true, &CaBundle::default()).expect("source");
        assert_eq!(source.current().expect("token").secret(), "ya29.adc");
        let _ = std::fs::remove_dir_all(&home);
    }

    #[test]
    fn when_nothing_gives_a_token_every_source_tried_is_named_with_the_fix() {
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let home = std::env::temp_dir().join(format!("sets3lock-empty-{}", std::process::id()));
        let var = vars(vec![
            ("GCE_METADATA_HOST", format!("127.0.0.1:{closed}")),
            ("HOME", home.display().to_string()),
        ]);
        let e = resolve(&var, true, &CaBundle::default())
            .expect("source")
            .ready()
            .expect_err("nothing")
            .to_string();
        assert!(
            e.starts_with(&format!(
                "tried GOOGLE_APPLICATION_CREDENTIALS (not set), gcloud's {}/.config/gcloud/application_default_credentials.json (not found), the metadata server (127.0.0.1:{closed}) (",
                home.display()
            )),
            "{e}"
        );
        assert!(e.ends_with(FIX), "{e}");
        let off = vars(vec![("NO_GCE_CHECK", "True".into())]);
        let e = resolve(&off, false, &CaBundle::default())
            .expect("source")
            .ready()
            .expect_err("nothing")
            .to_string();
        assert_eq!(
            e,
            format!("tried GOOGLE_APPLICATION_CREDENTIALS (not set), the metadata server (skipped: NO_GCE_CHECK); {FIX}")
        );
    }

    #[test]
    fn a_file_that_cannot_be_used_is_named_at_once() {
        let var = vars(vec![(
            "GOOGLE_APPLICATION_CREDENTIALS",
            "/nonexistent/sets3lock.json".into(),
        )]);
        let e = resolve(&var, true, &CaBundle::default())
            .map(|_| ())
            .expect_err("refused")
            .to_string();
        assert!(e.contains("/nonexistent/sets3lock.json"), "{e}");
    }
}
