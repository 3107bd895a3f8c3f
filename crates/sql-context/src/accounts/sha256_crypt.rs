//! The password hash `caching_sha2_password` keeps in `mysql.user`, in MySQL 8's format:
//! `$A$` + rounds / 1000 as 3 hex digits + `$` + a 20-byte salt + the 43-character digest.
//!
//! ```text
//! $A$005$ssssssssssssssssssssdddddddddddddddddddddddddddddddddddddddddddd
//! ^^^     salt (SALT_BYTES)  digest (DIGEST_CHARS)
//! |  rounds / ROUNDS_PER_UNIT, 3 uppercase hex digits (005: 5,000 rounds)
//! digest type A: SHA-256
//! ```
//!
//! The digest is SHA-256-crypt (Ulrich Drepper's "Unix crypt using SHA-256", the `$5$` of
//! glibc) run over the password and the salt, in its own base-64 alphabet and byte order.
//! MySQL departs from that specification in one place: its salt is 20 bytes where the
//! specification cuts salts at 16. That is why this is written here rather than taken from
//! the `sha-crypt` crate, which implements the specification and so cuts MySQL's salts
//! short: a hash from a MySQL server (`SHOW CREATE USER`, a dump of `mysql.user`) checks here.
//!
//! The hash is salted and slow on purpose (5,000 rounds, MySQL's
//! `caching_sha2_password_digest_rounds` default): it is what an attacker who reads the data
//! directory gets. The fast-authentication secret a login checks is kept in memory only,
//! learnt from a full authentication ([`super::Sha2Cache`]), as MySQL does.
//!
//! Where it sits: `quill-sql-context::accounts`, called when an account statement sets a password and when
//! the server checks the password a client sent in a full authentication.

use sha2::{Digest, Sha256};

/// What every hash of this format starts with.
pub const PREFIX: &str = "$A$";
/// Rounds are stored in thousands.
pub const ROUNDS_PER_UNIT: u32 = 1000;
/// MySQL's default and minimum rounds (`caching_sha2_password_digest_rounds`).
pub const ROUNDS_DEFAULT: u32 = 5000;
/// MySQL's maximum rounds (0xFFF thousands).
pub const ROUNDS_MAX: u32 = 0xFFF * ROUNDS_PER_UNIT;
/// Hex digits of the rounds field.
pub const ROUNDS_DIGITS: usize = 3;
/// Bytes of salt (MySQL's `CRYPT_SALT_LENGTH`).
pub const SALT_BYTES: usize = 20;
/// Characters of the encoded SHA-256 digest: 32 bytes at 6 bits a character, rounded up.
pub const DIGEST_CHARS: usize = (32 * 8_usize).div_ceil(6);
/// Where the salt starts: `$A$` + rounds + `$`.
pub const SALT_OFFSET: usize = PREFIX.len() + ROUNDS_DIGITS + 1;
/// Where the digest starts.
pub const DIGEST_OFFSET: usize = SALT_OFFSET + SALT_BYTES;
/// The length of a whole hash.
pub const HASH_BYTES: usize = DIGEST_OFFSET + DIGEST_CHARS;
const _: () = assert!(HASH_BYTES == 70, "MySQL's caching_sha2_password hashes are 70 bytes");

/// crypt's base-64 alphabet; salts Quill makes are drawn from it too.
const ALPHABET: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The digest bytes, three at a time, in the order SHA-256-crypt encodes them.
const ENCODING_ORDER: [[usize; 3]; 10] =
    [[0, 10, 20], [21, 1, 11], [12, 22, 2], [3, 13, 23], [24, 4, 14], [15, 25, 5], [6, 16, 26], [27, 7, 17], [18, 28, 8], [9, 19, 29]];

/// A new hash of `password` with a random salt and the default rounds.
#[must_use]
pub fn hash(password: &[u8]) -> String {
    use rand::RngExt as _;
    let mut rng = rand::rng();
    let salt: Vec<u8> = (0..SALT_BYTES).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())]).collect();
    hash_with(password, &salt, ROUNDS_DEFAULT)
}

/// The hash of `password` with this salt and rounds. REQUIRES: `salt` is `SALT_BYTES` long
/// and holds no `$`; `rounds` is a multiple of `ROUNDS_PER_UNIT` within range.
#[must_use]
pub fn hash_with(password: &[u8], salt: &[u8], rounds: u32) -> String {
    assert_eq!(salt.len(), SALT_BYTES);
    assert!(!salt.contains(&b'$'));
    assert!(rounds.is_multiple_of(ROUNDS_PER_UNIT));
    assert!((ROUNDS_PER_UNIT..=ROUNDS_MAX).contains(&rounds));
    let mut out = format!("{PREFIX}{:03X}$", rounds / ROUNDS_PER_UNIT).into_bytes();
    out.extend_from_slice(salt);
    out.extend_from_slice(&encode(&digest(password, salt, rounds)));
    debug_assert_eq!(out.len(), HASH_BYTES);
    String::from_utf8(out).expect("the salt is ASCII")
}

/// Whether `hash` has this format (what `verify` can check a password against).
#[must_use]
pub fn is_valid(hash: &str) -> bool {
    parse(hash.as_bytes()).is_some()
}

/// Whether `password` is the one `hash` was made from. Constant-time in the comparison.
#[must_use]
pub fn verify(hash: &str, password: &[u8]) -> bool {
    let Some((rounds, salt, stored)) = parse(hash.as_bytes()) else { return false };
    let computed = encode(&digest(password, salt, rounds));
    computed.iter().zip(stored).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0
}

/// Rounds, salt and encoded digest of a well-formed hash.
fn parse(hash: &[u8]) -> Option<(u32, &[u8], &[u8])> {
    if hash.len() != HASH_BYTES || !hash.starts_with(PREFIX.as_bytes()) || hash[SALT_OFFSET - 1] != b'$' {
        return None;
    }
    let units = std::str::from_utf8(&hash[PREFIX.len()..SALT_OFFSET - 1]).ok().and_then(|h| u32::from_str_radix(h, 16).ok())?;
    let salt = &hash[SALT_OFFSET..DIGEST_OFFSET];
    let digest = &hash[DIGEST_OFFSET..];
    let well_formed = units > 0 && !salt.contains(&b'$') && !salt.contains(&0) && digest.iter().all(|c| ALPHABET.contains(c));
    well_formed.then_some((units * ROUNDS_PER_UNIT, salt, digest))
}

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// `block` repeated to `len` bytes.
fn repeated(block: &[u8; 32], len: usize) -> Vec<u8> {
    block.iter().copied().cycle().take(len).collect()
}

/// SHA-256-crypt's digest (the specification's steps 1-21).
fn digest(password: &[u8], salt: &[u8], rounds: u32) -> [u8; 32] {
    let alternate = sha256(&[password, salt, password]);
    let mut a = Sha256::new();
    a.update(password);
    a.update(salt);
    a.update(repeated(&alternate, password.len()));
    let mut length = password.len();
    while length > 0 {
        a.update(if length & 1 == 1 { &alternate[..] } else { password });
        length >>= 1;
    }
    let mut current: [u8; 32] = a.finalize().into();

    let mut p = Sha256::new();
    for _ in 0..password.len() {
        p.update(password);
    }
    let p_bytes = repeated(&p.finalize().into(), password.len());
    let mut s = Sha256::new();
    for _ in 0..16 + usize::from(current[0]) {
        s.update(salt);
    }
    let s_bytes = repeated(&s.finalize().into(), salt.len());

    for round in 0..rounds {
        let mut c = Sha256::new();
        if round % 2 == 1 {
            c.update(&p_bytes);
        } else {
            c.update(current);
        }
        if round % 3 != 0 {
            c.update(&s_bytes);
        }
        if round % 7 != 0 {
            c.update(&p_bytes);
        }
        if round % 2 == 1 {
            c.update(current);
        } else {
            c.update(&p_bytes);
        }
        current = c.finalize().into();
    }
    current
}

/// The digest in crypt's base 64: 24 bits at a time, least significant 6 bits first.
fn encode(digest: &[u8; 32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(DIGEST_CHARS);
    let mut put = |bytes: [u8; 3], chars: usize| {
        let mut bits = u32::from(bytes[0]) << 16 | u32::from(bytes[1]) << 8 | u32::from(bytes[2]);
        for _ in 0..chars {
            out.push(ALPHABET[(bits & 0x3F) as usize]);
            bits >>= 6;
        }
    };
    for [a, b, c] in ENCODING_ORDER {
        put([digest[a], digest[b], digest[c]], 4);
    }
    put([0, digest[31], digest[30]], 3);
    debug_assert_eq!(out.len(), DIGEST_CHARS);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(hex: &str) -> String {
        let bytes: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn the_specifications_own_vectors() {
        // Drepper's SHA-crypt test vectors, whose salts are shorter than 16 bytes, so MySQL's
        // longer salt changes nothing (`openssl passwd -5` gives the same digests).
        let cases: [(&[u8], &[u8], u32, &str); 3] = [
            (b"Hello world!", b"saltstring", 5000, "5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5"),
            (b"Hello world!", b"saltstringsaltst", 10000, "3xv.VbSHBb41AL9AvLeujZkZRBAwqFMz2.opqey6IcA"),
            (
                b"a very much longer text to encrypt.  This one even stretches over morethan one line.",
                b"anotherlongsalts",
                1400,
                "Rx.j8H.h8HjEDGomFU8bDkXm3XIUnzyxf12oP84Bnq1",
            ),
        ];
        for (password, salt, rounds, expected) in cases {
            assert_eq!(String::from_utf8(encode(&digest(password, salt, rounds))).unwrap(), expected);
        }
    }

    #[test]
    fn a_hash_from_a_mysql_server_checks() {
        // `foobar` under a 20-byte salt holding control bytes, as a MySQL 8 server made it.
        let hash = unhex(
            "24412430303524031A69251C34295C4B35167C7F1E5A7B63091349503974624D34504B5A424679354856336868686F52485A736E4A733368786E427575516C73446469496537",
        );
        assert!(is_valid(&hash));
        assert!(verify(&hash, b"foobar"));
        assert!(!verify(&hash, b"not_foobar"));
        assert!(!verify(&hash, b""));
    }

    #[test]
    fn quills_hashes_round_trip_and_are_salted() {
        let first = hash(b"secret");
        let second = hash(b"secret");
        assert_ne!(first, second, "each hash has its own salt");
        for h in [&first, &second] {
            assert_eq!(h.len(), HASH_BYTES);
            assert!(h.starts_with("$A$005$"));
            assert!(verify(h, b"secret"));
            assert!(!verify(h, b"Secret"));
        }
    }

    #[test]
    fn malformed_hashes_are_refused() {
        let good = hash(b"x");
        for bad in [
            "".to_owned(),
            good[..HASH_BYTES - 1].to_owned(),
            format!("{good}A"),
            good.replacen("$A$", "$B$", 1),
            good.replacen("$A$005$", "$A$000$", 1),
            good.replacen("$A$005$", "$A$0G5$", 1),
            format!("{}!{}", &good[..DIGEST_OFFSET], &good[DIGEST_OFFSET + 1..]),
        ] {
            assert!(!is_valid(&bad), "{bad:?}");
            assert!(!verify(&bad, b"x"));
        }
    }
}
