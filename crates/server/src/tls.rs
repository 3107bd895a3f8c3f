//! TLS for client connections: a self-signed certificate generated into the data
//! directory on first start (as mysqld does with `auto_generate_certs`), loaded
//! into a rustls server configuration.
//!
//! Files: `<datadir>/server-cert.pem` and `<datadir>/server-key.pem`. An operator
//! may replace them with their own certificate and key; they are read at start.

use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Certificate file in the data directory.
pub const CERT_FILE: &str = "server-cert.pem";
/// Private key file in the data directory.
pub const KEY_FILE: &str = "server-key.pem";

/// Load (creating on first start) the server's certificate and build a TLS config.
///
/// # Errors
/// I/O and certificate errors, as text for the start-up log.
pub fn server_config(datadir: &Path) -> Result<Arc<ServerConfig>, String> {
    let cert_path = datadir.join(CERT_FILE);
    let key_path = datadir.join(KEY_FILE);
    if !cert_path.exists() || !key_path.exists() {
        let generated =
            rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).map_err(|e| format!("generating a certificate: {e}"))?;
        std::fs::write(&cert_path, generated.cert.pem()).map_err(|e| format!("writing {}: {e}", cert_path.display()))?;
        write_private(&key_path, &generated.signing_key.serialize_pem()).map_err(|e| format!("writing {}: {e}", key_path.display()))?;
        tracing::info!(cert = %cert_path.display(), "generated a self-signed TLS certificate");
    }
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert_path)
        .map_err(|e| format!("reading {}: {e}", cert_path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("reading {}: {e}", cert_path.display()))?;
    let key = PrivateKeyDer::from_pem_file(&key_path).map_err(|e| format!("reading {}: {e}", key_path.display()))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS versions: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS certificate: {e}"))?;
    Ok(Arc::new(config))
}

pub(crate) fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    f.write_all(text.as_bytes())
}
