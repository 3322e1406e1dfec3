//! TLS and mutual TLS on the gRPC port: rustls on ring (the `tokio-rustls` that
//! tonic's `tls-ring` feature builds), in the server's own accept loop
//! ([`super::conn`]), so that a TLS connection has every limit of a plaintext one.
//!
//! - No certificate: plaintext (the default).
//! - `--tls-cert` and `--tls-key` (PEM files): TLS 1.2 or 1.3, ALPN `h2`; clients
//!   check the server against the CA that signed the certificate.
//! - `--tls-client-ca` as well (PEM, one or more CA certificates): mutual TLS; a
//!   client must present a certificate signed by one of them (rustls'
//!   `WebPkiClientVerifier`), or the handshake fails before any RPC (TLS alert
//!   `CertificateRequired` or `UnknownCA`).
//!
//! The handshake happens in the connection's task after the connection has been
//! counted by `--max-connections`, and must be over, with the HTTP/2 preface read
//! through it, within `--handshake-timeout-seconds` of the accept (one timeout for
//! both); until then the connection is the first to be closed when the limit needs
//! room. Only the gRPC port is affected: `/metrics` and the analysis page stay
//! plaintext (bind them to a private address).

use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

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
    pub fn load(&self) -> Result<Option<TlsConfig>, String> {
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

/// A server TLS configuration (rustls on ring, ALPN `h2`), built by
/// [`server_tls_config`]; cheap to clone.
#[derive(Clone)]
pub struct TlsConfig {
    config: Arc<rustls::ServerConfig>,
    mutual: bool,
}

impl TlsConfig {
    /// The acceptor of the server's connections.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.config.clone())
    }

    /// Whether clients must present a certificate (mutual TLS).
    pub fn is_mutual(&self) -> bool {
        self.mutual
    }
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("mutual", &self.mutual)
            .finish()
    }
}

/// PEM certificates, or an error naming `what` when there is none or one does not
/// parse.
fn certificates(what: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the {what} file does not parse as PEM: {e}"))?;
    if certs.is_empty() {
        return Err(format!("the {what} file has no PEM certificate"));
    }
    Ok(certs)
}

/// A server TLS configuration from PEM bytes: the certificate chain and its private
/// key, and for mutual TLS the client CA certificates. Everything is checked now
/// (as the server would at its first connection): a bad certificate, a key that
/// does not parse or does not match the certificate, an empty CA file is an error.
pub fn server_tls_config(
    cert_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: Option<&[u8]>,
) -> Result<TlsConfig, String> {
    let chain = certificates("certificate", cert_pem)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| {
        format!("the key file has no PEM private key (PKCS#8, PKCS#1 or SEC1): {e}")
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match client_ca_pem {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for ca in certificates("client CA", pem)? {
                roots
                    .add(ca)
                    .map_err(|e| format!("a certificate of the client CA file: {e}"))?;
            }
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                    .build()
                    .map_err(|e| format!("the client CA: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("the certificate and key: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(TlsConfig {
        config: Arc::new(config),
        mutual: client_ca_pem.is_some(),
    })
}
