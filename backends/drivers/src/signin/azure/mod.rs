//! Azure's Entra ID chain, in `DefaultAzureCredential`'s order: a service principal's secret
//! or certificate, workload identity (AKS), managed identity (App Service, Functions, Container Apps; else the
//! VM's instance metadata), then the Azure CLI. Each gives bearer tokens for Azure Storage,
//! fetched on a thread of their own ahead of expiry (see `signin/refresh.rs`).

mod certificate;
mod chain;
mod cli;
mod entra;
mod managed;

pub(crate) use chain::resolve;

/// The resource the tokens are for (managed identity and the CLI name it so).
const RESOURCE: &str = "https://storage.azure.com";
/// The same, as an OAuth 2.0 scope (Entra ID's v2 token endpoint).
const SCOPE: &str = "https://storage.azure.com/.default";
