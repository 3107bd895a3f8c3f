//! caching_sha2_password's RSA key pair: how a client without TLS sends its password in a
//! full authentication, as MySQL 8 does it.
//!
//! The client asks for the public key (`CACHING_SHA2_REQUEST_PUBLIC_KEY`) unless it has it
//! already, XORs its password and a closing NUL with the handshake's scramble (repeated to
//! length), encrypts that with RSA-OAEP (SHA-1, MGF1 with SHA-1: OpenSSL's
//! `RSA_PKCS1_OAEP_PADDING`) and sends the ciphertext; [`RsaKeys::decrypt_password`] undoes it.
//!
//! Files, as mysqld's `caching_sha2_password_auto_generate_rsa_keys` makes them: a 2048-bit
//! key pair in the data directory, `private_key.pem` (PKCS#8, mode 0600) and `public_key.pem`
//! (SubjectPublicKeyInfo, what clients pin with `--server-public-key-path`). The variables
//! `caching_sha2_password_private_key_path` / `_public_key_path` name other files (relative
//! to the data directory); they are read at start-up, and made when missing while
//! auto-generation is ON. Without a key pair, a full authentication needs TLS.
//!
//! Decryption is AWS-LC's (aws-lc-rs), which is constant-time: a server decrypts whatever
//! any client sends, so a timing leak would give the key away.
//!
//! Where it sits: `server`, loaded by `main` at start-up and used by `conn::authenticate`.

use std::path::Path;

use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der, PublicKeyX509Der};
use aws_lc_rs::rsa::{KeySize, OAEP_SHA1_MGF1SHA1, OaepPrivateDecryptingKey, PrivateDecryptingKey};

/// The size of a generated key (MySQL's too).
pub const KEY_SIZE: KeySize = KeySize::Rsa2048;
/// PEM label of the private key file.
const PRIVATE_KEY_LABEL: &str = "PRIVATE KEY";
/// PEM label of the public key file and of what a client is sent.
const PUBLIC_KEY_LABEL: &str = "PUBLIC KEY";

/// The server's key pair.
pub struct RsaKeys {
    private: OaepPrivateDecryptingKey,
    /// `public_key.pem`'s text, sent to a client that asks.
    public_pem: String,
}

impl RsaKeys {
    /// Read the key pair named by the variables (making it first when missing and `generate`).
    ///
    /// # Errors
    /// I/O and key errors, as text for the start-up log.
    pub fn load(datadir: &Path, private_path: &str, public_path: &str, generate: bool) -> Result<RsaKeys, String> {
        let private_path = datadir.join(private_path);
        let public_path = datadir.join(public_path);
        if generate && !private_path.exists() && !public_path.exists() {
            let key = PrivateDecryptingKey::generate(KEY_SIZE).map_err(|_| "generating an RSA key pair failed".to_owned())?;
            let der = AsDer::<Pkcs8V1Der>::as_der(&key).map_err(|_| "encoding the RSA private key failed".to_owned())?;
            crate::tls::write_private(&private_path, &pem_text(PRIVATE_KEY_LABEL, der.as_ref()))
                .map_err(|e| format!("writing {}: {e}", private_path.display()))?;
            let public_der = AsDer::<PublicKeyX509Der>::as_der(&key.public_key()).map_err(|_| "encoding the RSA public key failed".to_owned())?;
            std::fs::write(&public_path, pem_text(PUBLIC_KEY_LABEL, public_der.as_ref())).map_err(|e| format!("writing {}: {e}", public_path.display()))?;
            tracing::info!(public_key = %public_path.display(), "generated an RSA key pair for caching_sha2_password");
        }
        let read = |path: &Path, label: &str| -> Result<Vec<u8>, String> {
            let text = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
            let block = pem::parse(text).map_err(|e| format!("reading {}: {e}", path.display()))?;
            if block.tag() != label {
                return Err(format!(
                    "{} holds a {}, not a {label} (convert an RSA PRIVATE KEY with `openssl pkcs8 -topk8 -nocrypt`)",
                    path.display(),
                    block.tag()
                ));
            }
            Ok(block.into_contents())
        };
        let key = PrivateDecryptingKey::from_pkcs8(&read(&private_path, PRIVATE_KEY_LABEL)?).map_err(|e| format!("{}: {e}", private_path.display()))?;
        let public_der = read(&public_path, PUBLIC_KEY_LABEL)?;
        let derived = AsDer::<PublicKeyX509Der>::as_der(&key.public_key()).map_err(|_| "encoding the RSA public key failed".to_owned())?;
        if derived.as_ref() != public_der.as_slice() {
            return Err(format!("{} is not the public key of {}", public_path.display(), private_path.display()));
        }
        let private = OaepPrivateDecryptingKey::new(key).map_err(|_| "the RSA key cannot decrypt OAEP".to_owned())?;
        Ok(RsaKeys { private, public_pem: pem_text(PUBLIC_KEY_LABEL, &public_der) })
    }

    /// The public key as PEM text.
    #[must_use]
    pub fn public_key_pem(&self) -> &str {
        &self.public_pem
    }

    /// The password in a client's RSA-encrypted answer (without its closing NUL), or `None`
    /// for anything that does not decrypt.
    #[must_use]
    pub fn decrypt_password(&self, ciphertext: &[u8], scramble: &[u8]) -> Option<Vec<u8>> {
        if ciphertext.len() != self.private.key_size_bytes() || scramble.is_empty() {
            return None;
        }
        let mut plaintext = vec![0; self.private.min_output_size()];
        let decrypted = self.private.decrypt(&OAEP_SHA1_MGF1SHA1, ciphertext, &mut plaintext, None).ok()?;
        quill_protocol::auth::caching_sha2_password_from_rsa_plaintext(decrypted, scramble)
    }
}

/// PEM with `\n` line ends, as OpenSSL writes it.
fn pem_text(label: &str, der: &[u8]) -> String {
    pem::encode_config(&pem::Pem::new(label, der), pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::rsa::{OaepPublicEncryptingKey, PublicEncryptingKey};

    /// What a client does: the protocol's plaintext, RSA-OAEP with the public key.
    fn client_encrypts(public_pem: &str, password: &[u8], scramble: &[u8]) -> Vec<u8> {
        let der = pem::parse(public_pem).unwrap().into_contents();
        let key = OaepPublicEncryptingKey::new(PublicEncryptingKey::from_der(&der).unwrap()).unwrap();
        let plain = quill_protocol::auth::caching_sha2_rsa_plaintext(password, scramble);
        let mut out = vec![0; key.ciphertext_size()];
        key.encrypt(&OAEP_SHA1_MGF1SHA1, &plain, &mut out, None).unwrap().to_vec()
    }

    #[test]
    fn a_key_pair_is_made_once_and_decrypts_what_a_client_encrypts() {
        let dir = std::env::temp_dir().join(format!("quill-rsa-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let keys = RsaKeys::load(&dir, "private_key.pem", "public_key.pem", true).unwrap();
        assert!(keys.public_key_pem().starts_with("-----BEGIN PUBLIC KEY-----\n"));
        let again = RsaKeys::load(&dir, "private_key.pem", "public_key.pem", true).unwrap();
        assert_eq!(again.public_key_pem(), keys.public_key_pem(), "a restart keeps the key clients may have pinned");

        let scramble = b"abcdefghij0123456789";
        let long = vec![b'p'; 40];
        for password in [&b"secret"[..], &long, b""] {
            let ciphertext = client_encrypts(keys.public_key_pem(), password, scramble);
            assert_eq!(keys.decrypt_password(&ciphertext, scramble).as_deref(), Some(password));
        }
        let ciphertext = client_encrypts(keys.public_key_pem(), b"secret", scramble);
        assert_ne!(keys.decrypt_password(&ciphertext, b"another scramble....").as_deref(), Some(&b"secret"[..]));
        let mut tampered = ciphertext.clone();
        tampered[7] ^= 1;
        assert_eq!(keys.decrypt_password(&tampered, scramble), None);
        assert_eq!(keys.decrypt_password(&ciphertext[1..], scramble), None);
        assert_eq!(keys.decrypt_password(b"secret\0", scramble), None);

        std::fs::write(dir.join("public_key.pem"), pem_text(PUBLIC_KEY_LABEL, b"not a key")).unwrap();
        assert!(RsaKeys::load(&dir, "private_key.pem", "public_key.pem", true).is_err(), "a public key that does not match is refused");
        assert!(RsaKeys::load(&dir, "missing.pem", "missing_pub.pem", false).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
