//! The metadata server of GCE, GKE and Cloud Run: `GET
//! http://HOST/computeMetadata/v1/instance/service-accounts/default/token` with
//! `Metadata-Flavor: Google`.

use crate::signin::bearer::{oauth_token, PROBE_LIMIT, SERVICE_LIMIT};
use crate::signin::fetch::{Http, Patience};
use crate::signin::refresh::Fetched;
use http::Method;
use std::time::Duration;
use url::Url;

/// The metadata server's default name.
pub(crate) const DEFAULT_HOST: &str = "metadata.google.internal";

/// How the metadata server is asked again, as Google's libraries ask it (a GKE Pod's server
/// may not be ready for a few seconds after it starts): on 408, 429 and 5xx and no answer in
/// time, five tries, the pauses doubling from 1 s.
const PATIENCE: Patience = Patience {
    tries: 5,
    first_pause: Duration::from_secs(1),
    most_pause: Duration::from_secs(16),
    again: |status| matches!(status, 408 | 429) || status >= 500,
};

/// The metadata server at `host` (`host[:port]`).
#[derive(Debug)]
pub(crate) struct Metadata {
    pub(crate) host: String,
    /// Named by `GCE_METADATA_HOST` or `GCE_METADATA_IP` (so expected to be there).
    pub(crate) named: bool,
}

impl Metadata {
    /// What a user calls it.
    pub(crate) fn name(&self) -> String {
        format!("the metadata server ({})", self.host)
    }

    /// The token request's URL: plain http, as the metadata server speaks, so only to this
    /// machine or its link (the token comes back in clear).
    pub(crate) fn url(&self) -> Result<Url, String> {
        let text = format!(
            "http://{}/computeMetadata/v1/instance/service-accounts/default/token",
            self.host
        );
        let url = Url::parse(&text)
            .map_err(|e| format!("the metadata server address {:?}: {e}", self.host))?;
        if !crate::signin::fetch::on_this_link(&url) {
            return Err(format!(
                "the metadata server {:?} (GCE_METADATA_HOST) is neither on this machine nor on its link: its token would cross the network in clear",
                self.host
            ));
        }
        Ok(url)
    }

    /// How long one request may take: the default server is asked at most a second until it
    /// has answered once (off Google Cloud it never does).
    pub(crate) fn limit(&self, answered_before: bool) -> Duration {
        if self.named || answered_before {
            SERVICE_LIMIT
        } else {
            PROBE_LIMIT
        }
    }

    /// A token of the instance's service account, asked again as [`PATIENCE`] says.
    pub(crate) fn token(&self, http: &Http) -> Result<Fetched<String>, String> {
        let answer = http.send_patiently(
            &PATIENCE,
            Method::GET,
            &self.url()?,
            &[("metadata-flavor", "Google")],
            None,
        )?;
        oauth_token(&answer, "the metadata server")
    }
}
