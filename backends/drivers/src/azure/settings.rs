//! Where the Azure account is and who we are there, following the Azure CLI's conventions:
//! `AZURE_STORAGE_CONNECTION_STRING`, or `AZURE_STORAGE_ACCOUNT` with `AZURE_STORAGE_KEY`
//! (Shared Key) or `AZURE_STORAGE_SAS_TOKEN`, else Entra ID bearer tokens found the way
//! `DefaultAzureCredential` finds them (see `signin/azure/`).

use crate::{BearerToken, Credentials, Error};
use url::Url;

/// Azurite's (and the old storage emulator's) well-known development account.
const DEV_ACCOUNT: &str = "devstoreaccount1";
/// Its well-known key (published in Azure's documentation; it guards nothing).
const DEV_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
/// The key, for tests of the signer.
#[cfg(all(test, feature = "tokio"))]
pub(crate) const DEV_KEY_FOR_TESTS: &str = DEV_KEY;
/// Its blob endpoint.
const DEV_ENDPOINT: &str = "http://127.0.0.1:10000/devstoreaccount1";

/// How to reach an Azure storage account, for `az://container/key` locks.
///
/// ```
/// use sets3lock::AzureSettings;
/// let vars = |name: &str| match name {
///     "AZURE_STORAGE_CONNECTION_STRING" => Some("UseDevelopmentStorage=true".to_string()),
///     _ => None,
/// };
/// let azure = AzureSettings::from_vars(vars).unwrap();
/// assert_eq!(azure.account.as_deref(), Some("devstoreaccount1"));
/// assert_eq!(azure.endpoint.unwrap().as_str(), "http://127.0.0.1:10000/devstoreaccount1");
/// ```
///
/// Two settings are equal when their fields are (see [`Credentials`] for when two slots are).
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct AzureSettings {
    /// The storage account.
    pub account: Option<String>,
    /// The account key (base64), for Shared Key signing.
    pub key: Option<String>,
    /// A SAS token (the query string, with or without a leading `?`); used when no key is set.
    pub sas: Option<String>,
    /// The blob endpoint (`https://ACCOUNT.blob.core.windows.net` by default; Azurite's is
    /// `http://127.0.0.1:10000/devstoreaccount1`).
    pub endpoint: Option<Url>,
    /// Where Entra ID bearer tokens come from, used when there is no key and no SAS: the
    /// chain (the default: found when the store opens, from the process environment, as
    /// `DefaultAzureCredential` finds it; see [`from_vars`](AzureSettings::from_vars)), a
    /// token given ([`Credentials::Fixed`], never refreshed), or a source of your own
    /// ([`Credentials::Source`]). `from_vars` finds the chain's source at once. Bearer
    /// tokens need an `https` endpoint.
    pub credentials: Credentials<BearerToken>,
    /// What the chain found when a store opened with `Credentials::Chain`, shared by clones.
    pub(crate) found: crate::signin::credentials::Found<BearerToken>,
    /// The CA bundle of the chain's token services, when `from_vars` made the source (see
    /// `CaBundle`).
    pub(crate) chain_ca: crate::signin::fetch::CaBundle,
}

impl PartialEq for AzureSettings {
    fn eq(&self, other: &AzureSettings) -> bool {
        self.account == other.account
            && self.key == other.key
            && self.sas == other.sas
            && self.endpoint == other.endpoint
            && self.credentials == other.credentials
    }
}

// Pointer identity is reflexive, symmetric and transitive: the relation is an equivalence.
impl Eq for AzureSettings {}

impl core::fmt::Debug for AzureSettings {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Never the key or the SAS: both are credentials.
        f.debug_struct("AzureSettings")
            .field("account", &self.account)
            .field("key", &self.key.as_ref().map(|_| "…"))
            .field("sas", &self.sas.as_ref().map(|_| "…"))
            .field("endpoint", &self.endpoint)
            .field("credentials", &self.credentials)
            .finish()
    }
}

impl AzureSettings {
    /// Reads `AZURE_STORAGE_CONNECTION_STRING` (which wins, as with the Azure CLI), else
    /// `AZURE_STORAGE_ACCOUNT`, `AZURE_STORAGE_KEY` and `AZURE_STORAGE_SAS_TOKEN`, from `var`.
    ///
    /// An account with no key and no SAS signs in with Entra ID, in the order of
    /// `DefaultAzureCredential`:
    /// 1. a service principal: `AZURE_TENANT_ID`, `AZURE_CLIENT_ID`, and
    ///    `AZURE_CLIENT_SECRET`, else `AZURE_CLIENT_CERTIFICATE_PATH` (a PEM file with the
    ///    certificate and its RSA key; `AZURE_CLIENT_SEND_CERTIFICATE_CHAIN=true` sends the
    ///    chain);
    /// 2. workload identity (AKS): `AZURE_FEDERATED_TOKEN_FILE`, `AZURE_CLIENT_ID`,
    ///    `AZURE_TENANT_ID`;
    /// 3. managed identity: `IDENTITY_ENDPOINT` with `IDENTITY_HEADER` (App Service,
    ///    Functions, Container Apps), else the VM's instance metadata at 169.254.169.254
    ///    (`AZURE_POD_IDENTITY_AUTHORITY_HOST` moves it; `AZURE_IMDS_DISABLED=true` skips it),
    ///    for the identity `AZURE_CLIENT_ID` if set; Service Fabric and Azure Arc are refused
    ///    in one line (not supported), never passed over for another identity;
    /// 4. the Azure CLI's account (`az login`), run from a system directory;
    ///    `SETS3LOCK_AZURE_CLI` names another command to run in place of `az` (an `az` off the
    ///    `PATH`, or a test's stand-in).
    ///
    /// An endpoint a variable names must be `https`, or on this machine or its link.
    ///
    /// `AZURE_AUTHORITY_HOST` (default `https://login.microsoftonline.com`) is the Entra ID
    /// endpoint of the first two. Nothing is asked until a lock is opened; managed identity
    /// and the CLI are then tried in turn, and the one that answers is kept.
    ///
    /// ```
    /// use sets3lock::{AzureSettings, Credentials};
    /// let vars = |name: &str| match name {
    ///     "AZURE_STORAGE_ACCOUNT" => Some("acct".to_string()),
    ///     "AZURE_TENANT_ID" => Some("contoso.onmicrosoft.com".to_string()),
    ///     "AZURE_CLIENT_ID" => Some("00000000-0000-0000-0000-000000000001".to_string()),
    ///     "AZURE_CLIENT_SECRET" => Some("not-shown".to_string()),
    ///     _ => None,
    /// };
    /// let azure = AzureSettings::from_vars(vars).unwrap();
    /// assert!(azure.key.is_none() && matches!(azure.credentials, Credentials::Source(_)));
    /// assert!(!format!("{azure:?}").contains("not-shown"));
    /// ```
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<AzureSettings, Error> {
        if let Some(text) = var("AZURE_STORAGE_CONNECTION_STRING") {
            return AzureSettings::from_connection_string(&text);
        }
        let (account, key, sas) = (
            var("AZURE_STORAGE_ACCOUNT"),
            var("AZURE_STORAGE_KEY"),
            var("AZURE_STORAGE_SAS_TOKEN"),
        );
        let chain_ca = crate::signin::fetch::CaBundle::new(
            var("SETS3LOCK_CA_BUNDLE").map(std::path::PathBuf::from),
        );
        let credentials = match (&account, &key, &sas) {
            (Some(_), None, None) => {
                Credentials::Source(crate::signin::azure::resolve(&var, &chain_ca)?)
            }
            _ => Credentials::Chain,
        };
        Ok(AzureSettings {
            account,
            key,
            sas,
            endpoint: None,
            credentials,
            found: Default::default(),
            chain_ca,
        })
    }

    /// Parses a connection string: `UseDevelopmentStorage=true`, or `AccountName=…;` with
    /// `AccountKey` or `SharedAccessSignature`, and `BlobEndpoint` or
    /// `DefaultEndpointsProtocol` and `EndpointSuffix`.
    ///
    /// ```
    /// use sets3lock::AzureSettings;
    /// let o = AzureSettings::from_connection_string(
    ///     "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net",
    /// ).unwrap();
    /// assert_eq!(o.endpoint.unwrap().as_str(), "https://acct.blob.core.windows.net/");
    /// assert!(AzureSettings::from_connection_string("AccountKey=a2V5").is_err());
    /// ```
    pub fn from_connection_string(text: &str) -> Result<AzureSettings, Error> {
        let bad = |reason: String| {
            Error::Settings(crate::SettingsError::AzureConnectionString { reason })
        };
        let mut fields = std::collections::HashMap::new();
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, value)) = part.split_once('=') else {
                return Err(bad(format!("{:?} is not NAME=VALUE", cut(part))));
            };
            fields.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
        let get = |name: &str| fields.get(name).filter(|v| !v.is_empty()).cloned();
        if get("usedevelopmentstorage").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(AzureSettings {
                account: Some(DEV_ACCOUNT.into()),
                key: Some(DEV_KEY.into()),
                sas: None,
                endpoint: Url::parse(DEV_ENDPOINT).ok(),
                credentials: Credentials::Chain,
                found: Default::default(),
                chain_ca: Default::default(),
            });
        }
        let endpoint = match get("blobendpoint") {
            Some(e) => {
                Some(crate::parse_endpoint(&e).map_err(|e| bad(format!("BlobEndpoint: {e}")))?)
            }
            None => None,
        };
        let account = get("accountname");
        let endpoint = match (endpoint, &account) {
            (Some(e), _) => Some(e),
            (None, Some(a)) => {
                let scheme = get("defaultendpointsprotocol").unwrap_or_else(|| "https".into());
                let suffix = get("endpointsuffix").unwrap_or_else(|| "core.windows.net".into());
                let e = format!("{scheme}://{a}.blob.{suffix}");
                Some(crate::parse_endpoint(&e).map_err(|e| bad(e.to_string()))?)
            }
            (None, None) => None,
        };
        let (key, sas) = (get("accountkey"), get("sharedaccesssignature"));
        if account.is_none() && sas.is_none() {
            return Err(bad(
                "it names no AccountName (nor a SharedAccessSignature)".into()
            ));
        }
        if endpoint.is_none() {
            return Err(bad(
                "it names no BlobEndpoint and no AccountName to derive one".into(),
            ));
        }
        Ok(AzureSettings {
            account,
            key,
            sas,
            endpoint,
            credentials: Credentials::Chain,
            found: Default::default(),
            chain_ca: Default::default(),
        })
    }
}

fn cut(s: &str) -> String {
    // Never a whole key in a message.
    s.chars().take(24).collect()
}
