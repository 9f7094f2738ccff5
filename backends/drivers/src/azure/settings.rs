//! Where the Azure account is and who we are there, following the Azure CLI's conventions:
//! `AZURE_STORAGE_CONNECTION_STRING`, or `AZURE_STORAGE_ACCOUNT` with `AZURE_STORAGE_KEY`
//! (Shared Key) or `AZURE_STORAGE_SAS_TOKEN`.

use crate::Error;
use url::Url;

/// Azurite's (and the old storage emulator's) well-known development account.
const DEV_ACCOUNT: &str = "devstoreaccount1";
/// Its well-known key (published in Azure's documentation; it guards nothing).
const DEV_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
/// The key, for tests of the signer.
#[cfg(test)]
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
#[derive(Clone, Default, PartialEq, Eq)]
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
}

impl core::fmt::Debug for AzureSettings {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Never the key or the SAS: both are credentials.
        f.debug_struct("AzureSettings")
            .field("account", &self.account)
            .field("key", &self.key.as_ref().map(|_| "…"))
            .field("sas", &self.sas.as_ref().map(|_| "…"))
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

impl AzureSettings {
    /// Reads `AZURE_STORAGE_CONNECTION_STRING` (which wins, as with the Azure CLI), else
    /// `AZURE_STORAGE_ACCOUNT`, `AZURE_STORAGE_KEY` and `AZURE_STORAGE_SAS_TOKEN`, from `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<AzureSettings, Error> {
        if let Some(text) = var("AZURE_STORAGE_CONNECTION_STRING") {
            return AzureSettings::from_connection_string(&text);
        }
        Ok(AzureSettings {
            account: var("AZURE_STORAGE_ACCOUNT"),
            key: var("AZURE_STORAGE_KEY"),
            sas: var("AZURE_STORAGE_SAS_TOKEN"),
            endpoint: None,
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
        let bad = |reason: String| Error::AzureConnectionString { reason };
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
        })
    }
}

fn cut(s: &str) -> String {
    // Never a whole key in a message.
    s.chars().take(24).collect()
}
