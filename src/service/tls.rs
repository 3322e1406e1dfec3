//! TLS and mutual TLS on the gRPC port: rustls (on ring) through tonic's own
//! support ([`ServerTlsConfig`]).
//!
//! - No certificate: plaintext (the default).
//! - `--tls-cert` and `--tls-key` (PEM files): TLS; clients check the server against
//!   the CA that signed the certificate.
//! - `--tls-client-ca` as well (PEM, one or more CA certificates): mutual TLS; a
//!   client must present a certificate signed by one of them, or the handshake fails
//!   before any RPC.
//!
//! The handshake must finish within [`HANDSHAKE_TIMEOUT`], so a connection that never
//! completes it holds nothing for long. Only the gRPC port is affected: `/metrics`
//! and the analysis page stay plaintext (bind them to a private address).

use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tonic::transport::{Certificate, Identity, ServerTlsConfig};

/// How long a client has to complete the TLS handshake (10 s).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS flags of `serve` (each also an environment variable).
#[derive(Args, Debug, Clone, Default)]
pub struct TlsArgs {
    /// Serve gRPC over TLS with this certificate chain (PEM; the server's
    /// certificate first). Needs --tls-key. Default: plaintext.
    #[arg(long, env = "TAVLI_TLS_CERT", requires = "tls_key", value_name = "PEM")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, env = "TAVLI_TLS_KEY", requires = "tls_cert", value_name = "PEM")]
    pub tls_key: Option<PathBuf>,
    /// Mutual TLS: accept only clients whose certificate is signed by one of these
    /// CA certificates (PEM). Needs --tls-cert.
    #[arg(
        long,
        env = "TAVLI_TLS_CLIENT_CA",
        requires = "tls_cert",
        value_name = "PEM"
    )]
    pub tls_client_ca: Option<PathBuf>,
}

impl TlsArgs {
    /// The server TLS configuration from the files named by the flags, or `None`
    /// (plaintext) when no certificate is given. Errors name the flag, the file and
    /// the reason (unreadable file, not PEM, key not matching...).
    pub fn load(&self) -> Result<Option<ServerTlsConfig>, String> {
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else {
            return Ok(None);
        };
        let read = |flag: &str, path: &Path| {
            std::fs::read(path).map_err(|e| format!("--{flag} {}: {e}", path.display()))
        };
        let cert_pem = read("tls-cert", cert)?;
        let key_pem = read("tls-key", key)?;
        let ca_pem = match &self.tls_client_ca {
            Some(ca) => Some(read("tls-client-ca", ca)?),
            None => None,
        };
        server_tls_config(&cert_pem, &key_pem, ca_pem.as_deref())
            .map(Some)
            .map_err(|e| match &self.tls_client_ca {
                Some(ca) => format!(
                    "TLS set-up with --tls-cert {}, --tls-key {}, --tls-client-ca {}: {e}",
                    cert.display(),
                    key.display(),
                    ca.display()
                ),
                None => format!(
                    "TLS set-up with --tls-cert {}, --tls-key {}: {e}",
                    cert.display(),
                    key.display()
                ),
            })
    }
}

/// A server TLS configuration from PEM bytes: the certificate chain and its private
/// key, and for mutual TLS the client CA certificates. The configuration is built
/// once here (as the server would), so a bad certificate, a key that does not parse
/// or an empty CA file is an error now, not at the first connection.
pub fn server_tls_config(
    cert_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: Option<&[u8]>,
) -> Result<ServerTlsConfig, String> {
    for (what, pem) in [
        ("certificate", Some(cert_pem)),
        ("client CA", client_ca_pem),
    ] {
        if let Some(pem) = pem {
            if !String::from_utf8_lossy(pem).contains("-----BEGIN CERTIFICATE-----") {
                return Err(format!("the {what} file has no PEM certificate"));
            }
        }
    }
    let mut config = ServerTlsConfig::new()
        .identity(Identity::from_pem(cert_pem, key_pem))
        .timeout(HANDSHAKE_TIMEOUT);
    if let Some(ca) = client_ca_pem {
        config = config.client_ca_root(Certificate::from_pem(ca));
    }
    tonic::transport::Server::builder()
        .tls_config(config.clone())
        .map_err(|e| {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            text
        })?;
    Ok(config)
}
