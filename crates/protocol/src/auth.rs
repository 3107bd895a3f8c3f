//! Authentication: the scramble, the two password plugins MySQL 8 clients speak, and the
//! packets that switch plugins or continue an exchange.
//!
//! The server sends a 20-byte random scramble (`SCRAMBLE_LEN`) in the initial handshake. Its
//! bytes are 7-bit, never 0x00 and never `$` (MySQL's `generate_user_salt`), because some
//! clients treat it as a C string.
//!
//! `mysql_native_password`: the server keeps `stage2 = SHA1(SHA1(password))` (shown in
//! `mysql.user` as `*` + 40 uppercase hex digits). The client answers
//! `SHA1(password) XOR SHA1(scramble || stage2)`. The server recomputes
//! `SHA1(scramble || stage2)`, XORs it out to recover a candidate `SHA1(password)`, and
//! accepts when `SHA1(candidate) == stage2`.
//!
//! `caching_sha2_password` fast path: the client answers
//! `SHA256(password) XOR SHA256(SHA256(SHA256(password)) || scramble)` (note: the stored
//! value comes first here, the scramble first in native). The secret the server needs to
//! check it is `stage2 = SHA256(SHA256(password))` (`CachingSha2Secret`): XOR out
//! `SHA256(stage2 || scramble)`, hash the candidate once more and compare with `stage2`.
//! Whoever holds that secret and observes one exchange can recover `SHA256(password)` and
//! log in, so the server keeps it in memory only, learnt from a "full authentication": it
//! answers `CACHING_SHA2_PERFORM_FULL_AUTHENTICATION` (AuthMoreData 0x01 0x04), and the
//! client sends its password, in clear followed by NUL over TLS, or RSA-encrypted without
//! it (after asking for the server's public key with `CACHING_SHA2_REQUEST_PUBLIC_KEY`, 0x02,
//! answered with AuthMoreData and the key as PEM). A good fast response is answered with
//! `CACHING_SHA2_FAST_AUTH_SUCCESS` (0x01 0x03) and then OK. The server side of the full
//! exchange (the stored hash, the cache, the RSA key) lives in `quill_sql::accounts` and the
//! server's `rsa_keys`; this module holds the formulas and packets.
//!
//! An empty password is stored as `None` and matches only an empty response (a client may
//! send zero bytes or a single NUL). Comparisons are constant-time.

use rand::{Rng, RngExt};
use sha1::Sha1;
use sha2::{Digest, Sha256};

use crate::packet::PacketWriter;

/// Length of the server's random challenge.
pub const SCRAMBLE_LEN: usize = 20;
/// The server's random challenge.
pub type Scramble = [u8; SCRAMBLE_LEN];
/// `SHA1(SHA1(password))`, what the server keeps for a `mysql_native_password` account.
pub type NativePasswordHash = [u8; SHA1_LEN];
/// `SHA256(SHA256(password))`, what the server keeps for a `caching_sha2_password` account.
pub type CachingSha2Secret = [u8; SHA256_LEN];

pub const SHA1_LEN: usize = 20;
pub const SHA256_LEN: usize = 32;
pub const MYSQL_NATIVE_PASSWORD: &str = "mysql_native_password";
pub const CACHING_SHA2_PASSWORD: &str = "caching_sha2_password";
/// First byte of an AuthSwitchRequest.
pub const AUTH_SWITCH_REQUEST_HEADER: u8 = 0xFE;
/// First byte of an AuthMoreData packet.
pub const AUTH_MORE_DATA_HEADER: u8 = 0x01;
/// caching_sha2: the client asks for the server's RSA public key (a 1-byte packet).
pub const CACHING_SHA2_REQUEST_PUBLIC_KEY: u8 = 0x02;
/// caching_sha2: the fast response was correct; an OK packet follows.
pub const CACHING_SHA2_FAST_AUTH_SUCCESS: u8 = 0x03;
/// caching_sha2: the client must send its password (cleartext over TLS, or RSA-encrypted).
pub const CACHING_SHA2_PERFORM_FULL_AUTHENTICATION: u8 = 0x04;
/// Length of `"*"` + 40 hex digits, MySQL's textual native password hash.
pub const NATIVE_PASSWORD_HASH_HEX_LEN: usize = 1 + 2 * SHA1_LEN;

/// A fresh scramble from the thread-local cryptographic generator.
#[must_use]
pub fn generate_scramble() -> Scramble {
    generate_scramble_with(&mut rand::rng())
}

/// A scramble drawn from `rng`: 7-bit bytes, never 0x00 and never `$`.
pub fn generate_scramble_with<R: Rng + ?Sized>(rng: &mut R) -> Scramble {
    let mut scramble = [0u8; SCRAMBLE_LEN];
    for byte in &mut scramble {
        let mut candidate = rng.random::<u8>() & 0x7F;
        if candidate == 0 || candidate == b'$' {
            candidate += 1;
        }
        *byte = candidate;
    }
    debug_assert!(scramble.iter().all(|&byte| byte != 0));
    scramble
}

fn sha1(parts: &[&[u8]]) -> [u8; SHA1_LEN] {
    let mut hasher = Sha1::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

fn sha256(parts: &[&[u8]]) -> [u8; SHA256_LEN] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

fn xor<const N: usize>(left: &[u8; N], right: &[u8; N]) -> [u8; N] {
    std::array::from_fn(|i| left[i] ^ right[i])
}

/// Equality whose running time does not depend on where the inputs differ.
fn constant_time_eq(left: &[u8], right: &[u8]) -> bool {
    left.len() == right.len() && left.iter().zip(right).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// Zero bytes or one NUL: what clients send for an empty password.
fn is_empty_response(response: &[u8]) -> bool {
    response.is_empty() || response == [0]
}

/// The stored hash for `password`, `None` for the empty password.
#[must_use]
pub fn native_password_hash(password: &[u8]) -> Option<NativePasswordHash> {
    if password.is_empty() {
        return None;
    }
    Some(sha1(&[&sha1(&[password])]))
}

/// MySQL's text form of a native hash: `*` + 40 uppercase hex digits.
#[must_use]
pub fn native_password_hash_to_hex(hash: &NativePasswordHash) -> String {
    let mut text = String::with_capacity(NATIVE_PASSWORD_HASH_HEX_LEN);
    text.push('*');
    for byte in hash {
        text.push_str(&format!("{byte:02X}"));
    }
    text
}

/// Parses `*` + 40 hex digits (either case); `None` if the text is not of that form.
#[must_use]
pub fn native_password_hash_from_hex(text: &str) -> Option<NativePasswordHash> {
    let digits = text.strip_prefix('*')?;
    if digits.len() != 2 * SHA1_LEN || !digits.is_ascii() {
        return None;
    }
    let mut hash = [0u8; SHA1_LEN];
    for (i, byte) in hash.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&digits[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(hash)
}

/// The client's answer to `scramble` (what a connector computes); empty for no password.
#[must_use]
pub fn native_password_scramble(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = sha1(&[password]);
    let stage2 = sha1(&[&stage1]);
    xor(&stage1, &sha1(&[scramble, &stage2])).to_vec()
}

/// Whether `response` proves knowledge of the password whose hash is `stored`.
#[must_use]
pub fn verify_native_password(stored: Option<&NativePasswordHash>, scramble: &[u8], response: &[u8]) -> bool {
    let Some(stage2) = stored else {
        return is_empty_response(response);
    };
    let Ok(response) = <&[u8; SHA1_LEN]>::try_from(response) else {
        return false;
    };
    let candidate_stage1 = xor(response, &sha1(&[scramble, stage2]));
    constant_time_eq(&sha1(&[&candidate_stage1]), stage2)
}

/// The secret a server keeps for `password`: `SHA256(SHA256(password))`; `None` if empty.
#[must_use]
pub fn caching_sha2_secret(password: &[u8]) -> Option<CachingSha2Secret> {
    if password.is_empty() {
        return None;
    }
    Some(sha256(&[&sha256(&[password])]))
}

/// The client's fast-auth answer to `scramble`; empty for no password.
#[must_use]
pub fn caching_sha2_scramble(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = sha256(&[password]);
    let stage2 = sha256(&[&stage1]);
    xor(&stage1, &sha256(&[&stage2, scramble])).to_vec()
}

/// Whether a fast-auth `response` matches the account whose secret is `secret`.
#[must_use]
pub fn verify_caching_sha2_fast(secret: Option<&CachingSha2Secret>, scramble: &[u8], response: &[u8]) -> bool {
    let Some(stage2) = secret else {
        return is_empty_response(response);
    };
    let Ok(response) = <&[u8; SHA256_LEN]>::try_from(response) else {
        return false;
    };
    let candidate_stage1 = xor(response, &sha256(&[stage2, scramble]));
    constant_time_eq(&sha256(&[&candidate_stage1]), stage2)
}

/// caching_sha2 without TLS: what the client encrypts with the server's RSA public key, the
/// password and a NUL XORed with the scramble (its first `SCRAMBLE_LEN` bytes, repeated).
#[must_use]
pub fn caching_sha2_rsa_plaintext(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    let mut data = password.to_vec();
    data.push(0);
    xor_with_scramble(&mut data, scramble);
    data
}

/// The password in what the server decrypted ([`caching_sha2_rsa_plaintext`] undone), or
/// `None` when it does not end with the NUL.
#[must_use]
pub fn caching_sha2_password_from_rsa_plaintext(plaintext: &[u8], scramble: &[u8]) -> Option<Vec<u8>> {
    let mut data = plaintext.to_vec();
    xor_with_scramble(&mut data, scramble);
    (data.pop() == Some(0)).then_some(data)
}

fn xor_with_scramble(data: &mut [u8], scramble: &[u8]) {
    let scramble = &scramble[..scramble.len().min(SCRAMBLE_LEN)];
    if scramble.is_empty() {
        return;
    }
    for (b, s) in data.iter_mut().zip(scramble.iter().cycle()) {
        *b ^= s;
    }
}

/// AuthSwitchRequest: 0xFE, plugin name, NUL, plugin data (the scramble), NUL.
pub fn write_auth_switch_request(writer: &mut PacketWriter, plugin_name: &str, scramble: &[u8]) {
    writer.write_packet_with(|out| {
        out.push(AUTH_SWITCH_REQUEST_HEADER);
        out.extend_from_slice(plugin_name.as_bytes());
        out.push(0);
        out.extend_from_slice(scramble);
        out.push(0);
    });
}

/// AuthMoreData: 0x01 followed by `data` (e.g. `[CACHING_SHA2_FAST_AUTH_SUCCESS]`, or a PEM
/// public key).
pub fn write_auth_more_data(writer: &mut PacketWriter, data: &[u8]) {
    writer.write_packet_with(|out| {
        out.push(AUTH_MORE_DATA_HEADER);
        out.extend_from_slice(data);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    const FIXED_SCRAMBLE: &Scramble = b"abcdefghij0123456789";

    #[test]
    fn scrambles_are_seven_bit_and_never_nul_or_dollar() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..1000 {
            let scramble = generate_scramble_with(&mut rng);
            assert!(scramble.iter().all(|&b| b != 0 && b != b'$' && b < 0x80), "{scramble:?}");
        }
        assert_ne!(generate_scramble(), generate_scramble());
    }

    #[test]
    fn native_hash_of_secret_is_the_well_known_value() {
        let hash = native_password_hash(b"secret").unwrap();
        assert_eq!(native_password_hash_to_hex(&hash), "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7");
        assert_eq!(native_password_hash_from_hex("*14e65567abdb5135d0cfd9a70b3032c179a49ee7"), Some(hash));
        assert_eq!(native_password_hash_from_hex("14E65567"), None);
        assert_eq!(native_password_hash(b""), None);
    }

    #[test]
    fn native_response_for_secret_matches_the_formula_and_verifies() {
        let stage1 = sha1(&[b"secret"]);
        let stage2 = sha1(&[&stage1]);
        let expected = xor(&stage1, &sha1(&[FIXED_SCRAMBLE, &stage2]));
        let response = native_password_scramble(b"secret", FIXED_SCRAMBLE);
        assert_eq!(response, expected);

        let stored = native_password_hash_from_hex("*14E65567ABDB5135D0CFD9A70B3032C179A49EE7").unwrap();
        assert!(verify_native_password(Some(&stored), FIXED_SCRAMBLE, &response));
        let wrong = native_password_scramble(b"Secret", FIXED_SCRAMBLE);
        assert!(!verify_native_password(Some(&stored), FIXED_SCRAMBLE, &wrong));
        assert!(!verify_native_password(Some(&stored), b"another scramble!!!!", &response));
        assert!(!verify_native_password(Some(&stored), FIXED_SCRAMBLE, &response[..19]));
        assert!(!verify_native_password(Some(&stored), FIXED_SCRAMBLE, b""));
    }

    #[test]
    fn empty_password_accepts_only_an_empty_response() {
        assert!(verify_native_password(None, FIXED_SCRAMBLE, b""));
        assert!(verify_native_password(None, FIXED_SCRAMBLE, b"\0"));
        assert!(!verify_native_password(None, FIXED_SCRAMBLE, &[1; 20]));
        assert!(verify_caching_sha2_fast(None, FIXED_SCRAMBLE, b""));
        assert!(!verify_caching_sha2_fast(None, FIXED_SCRAMBLE, &[1; 32]));
        assert!(native_password_scramble(b"", FIXED_SCRAMBLE).is_empty());
    }

    #[test]
    fn caching_sha2_fast_auth_round_trip() {
        let secret = caching_sha2_secret(b"secret").unwrap();
        assert_eq!(secret, sha256(&[&sha256(&[b"secret"])]));
        let response = caching_sha2_scramble(b"secret", FIXED_SCRAMBLE);
        assert_eq!(response.len(), SHA256_LEN);
        let stage1 = sha256(&[b"secret"]);
        assert_eq!(response, xor(&stage1, &sha256(&[&secret, FIXED_SCRAMBLE])));
        assert!(verify_caching_sha2_fast(Some(&secret), FIXED_SCRAMBLE, &response));
        let wrong = caching_sha2_scramble(b"secreT", FIXED_SCRAMBLE);
        assert!(!verify_caching_sha2_fast(Some(&secret), FIXED_SCRAMBLE, &wrong));
        assert!(!verify_caching_sha2_fast(Some(&secret), b"zzzzzzzzzzzzzzzzzzzz", &response));
    }

    #[test]
    fn the_rsa_plaintext_is_the_password_and_a_nul_xor_the_scramble() {
        let plain = caching_sha2_rsa_plaintext(b"secret", FIXED_SCRAMBLE);
        assert_eq!(plain.len(), 7);
        assert_eq!(plain[0], b's' ^ b'a');
        assert_eq!(plain[6], FIXED_SCRAMBLE[6]);
        let long = vec![b'p'; 45];
        let plain = caching_sha2_rsa_plaintext(&long, FIXED_SCRAMBLE);
        assert_eq!(plain[SCRAMBLE_LEN], b'p' ^ FIXED_SCRAMBLE[0], "the scramble repeats");
        assert_eq!(caching_sha2_password_from_rsa_plaintext(&plain, FIXED_SCRAMBLE), Some(long));
        assert_eq!(caching_sha2_password_from_rsa_plaintext(b"secret", FIXED_SCRAMBLE), None, "no closing NUL");
    }

    #[test]
    fn auth_switch_request_and_more_data_bytes() {
        let mut writer = PacketWriter::new(2);
        write_auth_switch_request(&mut writer, MYSQL_NATIVE_PASSWORD, FIXED_SCRAMBLE);
        let mut expected = vec![0xFE];
        expected.extend_from_slice(b"mysql_native_password\0abcdefghij0123456789\0");
        let mut framed = vec![expected.len() as u8, 0, 0, 2];
        framed.extend_from_slice(&expected);
        assert_eq!(writer.take(), framed);

        write_auth_more_data(&mut writer, &[CACHING_SHA2_FAST_AUTH_SUCCESS]);
        assert_eq!(writer.take(), [2, 0, 0, 3, 0x01, 0x03]);
        write_auth_more_data(&mut writer, &[CACHING_SHA2_PERFORM_FULL_AUTHENTICATION]);
        assert_eq!(writer.take(), [2, 0, 0, 4, 0x01, 0x04]);
    }
}
