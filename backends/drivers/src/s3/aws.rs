//! The whole AWS credential chain through aws-config (feature `aws-config`): environment,
//! profiles (with SSO, assume-role, credential processes), web identity, ECS and EC2 roles.
//! Temporary credentials are refreshed in the background, five minutes before they expire,
//! so that a long hold keeps signing with valid ones.

use crate::{AwsCredentialSource, AwsCredentials, Error, S3Settings};
use aws_credential_types::provider::ProvideCredentials;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Refresh this long before the credentials expire.
const MARGIN: Duration = Duration::from_secs(300);
/// After a failed fetch, try again this soon.
const RETRY: Duration = Duration::from_secs(10);

type Cached = Result<AwsCredentials, String>;

/// Credentials from aws-config's chain, served from a cache that a background thread keeps
/// fresh.
#[derive(Debug)]
struct AwsChain {
    cache: Arc<Mutex<Cached>>,
}

impl AwsCredentialSource for AwsChain {
    fn current(&self) -> Result<AwsCredentials, String> {
        match self.cache.lock() {
            Ok(c) => c.clone(),
            Err(e) => e.into_inner().clone(),
        }
    }
}

impl S3Settings {
    /// Options from aws-config: the region from the environment or the profile, the endpoint
    /// from `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL` or the profile, and credentials from
    /// the whole default chain, refreshed before they expire.
    ///
    /// Blocks until the first credentials arrive (30 s at most): from async code, call it in
    /// `tokio::task::spawn_blocking`.
    ///
    /// ```no_run
    /// let mut options = sets3lock::Options::default();
    /// options.s3 = sets3lock::S3Settings::from_aws_config()?;
    /// let locker = sets3lock::blocking::Locker::new("s3://my-bucket/locks/job", options)?;
    /// # Ok::<(), sets3lock::Error>(())
    /// ```
    pub fn from_aws_config() -> Result<S3Settings, Error> {
        let mut options = S3Settings::from_env()?;
        let (first_tx, first_rx) = mpsc::channel();
        let cache = Arc::new(Mutex::new(Err("not loaded yet".to_string())));
        let keeper = Arc::downgrade(&cache);
        std::thread::Builder::new()
            .name("sets3lock-credentials".into())
            .spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    let _ =
                        first_tx.send(Err("could not start a runtime for aws-config".to_string()));
                    return;
                };
                rt.block_on(async move {
                    let config = aws_config::load_from_env().await;
                    let region = config.region().map(|r| r.to_string());
                    let endpoint = config.endpoint_url().map(str::to_owned);
                    let Some(provider) = config.credentials_provider() else {
                        let _ = first_tx
                            .send(Err("aws-config found no credential provider".to_string()));
                        return;
                    };
                    let mut first = Some((first_tx, region, endpoint));
                    loop {
                        let (fetched, wait) = match provider.provide_credentials().await {
                            Ok(c) => {
                                let wait = c
                                    .expiry()
                                    .and_then(|e| e.duration_since(SystemTime::now()).ok())
                                    .map(|left| left.saturating_sub(MARGIN).max(RETRY))
                                    .unwrap_or(Duration::from_secs(3600));
                                let creds = match c.session_token() {
                                    Some(t) => AwsCredentials::new_with_token(
                                        c.access_key_id(),
                                        c.secret_access_key(),
                                        t,
                                    ),
                                    None => AwsCredentials::new(
                                        c.access_key_id(),
                                        c.secret_access_key(),
                                    ),
                                };
                                (Ok(creds), wait)
                            }
                            Err(e) => (Err(format!("aws-config: {e}")), RETRY),
                        };
                        let Some(cache) = keeper.upgrade() else {
                            return;
                        };
                        match cache.lock() {
                            Ok(mut c) => *c = fetched.clone(),
                            Err(e) => *e.into_inner() = fetched.clone(),
                        }
                        drop(cache);
                        if let Some((tx, region, endpoint)) = first.take() {
                            let _ = tx.send(fetched.map(|_| (region, endpoint)));
                        }
                        tokio::time::sleep(wait).await;
                    }
                });
            })
            .map_err(|source| Error::Thread {
                name: "credentials",
                source,
            })?;
        let (region, endpoint) = match first_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(found)) => found,
            Ok(Err(why)) => {
                return Err(Error::Profile {
                    profile: "default chain".into(),
                    reason: why,
                })
            }
            Err(_) => {
                return Err(Error::Profile {
                    profile: "default chain".into(),
                    reason: "no credentials within 30 s".into(),
                })
            }
        };
        if let Some(region) = region {
            options.region = region;
        }
        if options.endpoint.is_none() {
            if let Some(e) = endpoint {
                options.endpoint = Some(crate::parse_endpoint(&e)?);
            }
        }
        options.credential_source = Some(Arc::new(AwsChain { cache }));
        Ok(options)
    }
}
